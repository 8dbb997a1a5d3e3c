//! A cheap isomorphism-invariant hash of a skeleton given as a bond list ([`wl_hash`]): three
//! rounds of colour refinement (Weisfeiler-Leman) from the degrees, each atom's new colour
//! mixing its own with the sum of its neighbours' (a multiset, so the atom order does not
//! matter), and the graph's hash the sum of its atoms' final colours with the atom and bond
//! counts. Isomorphic graphs always hash alike; different graphs usually differ. The walk uses
//! it as a filter only: a graph whose hash no library skeleton has cannot be a library
//! skeleton, so its canonical form (about 30 times the cost) is never computed; a graph that
//! passes is still canonicalized and looked up by its exact key.

/// Refinement rounds.
pub const ROUNDS: u32 = 3;

#[inline]
fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Reusable buffers of [`wl_hash`].
#[derive(Debug, Default, Clone)]
pub struct WlScratch {
    colour: Vec<u64>,
    sum: Vec<u64>,
    sent: Vec<u64>,
}

/// The hash of the graph of `atoms` atoms and `bonds` (pairs of atom indices below `atoms`).
pub fn wl_hash(atoms: usize, bonds: &[(u32, u32)], s: &mut WlScratch) -> u64 {
    s.colour.clear();
    s.colour.resize(atoms, 0);
    for &(i, j) in bonds {
        s.colour[i as usize] += 1;
        s.colour[j as usize] += 1;
    }
    for round in 0..ROUNDS {
        let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(round) + 1);
        // what each atom sends its neighbours, mixed once per atom
        s.sent.clear();
        s.sent.extend(s.colour.iter().map(|&c| mix(c ^ salt)));
        s.sum.clear();
        s.sum.resize(atoms, 0);
        for &(i, j) in bonds {
            let (i, j) = (i as usize, j as usize);
            s.sum[i] = s.sum[i].wrapping_add(s.sent[j]);
            s.sum[j] = s.sum[j].wrapping_add(s.sent[i]);
        }
        for ((c, &t), &own) in s.colour.iter_mut().zip(&s.sum).zip(&s.sent) {
            *c = mix(own.rotate_left(17) ^ t);
        }
    }
    let mut h = mix(((atoms as u64) << 32) ^ bonds.len() as u64);
    for &c in &s.colour {
        h = h.wrapping_add(mix(c ^ 0x5851_f42d_4c95_7f2d));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_keeps_the_hash_and_a_different_graph_changes_it() {
        let mut s = WlScratch::default();
        // o-xylene's skeleton, then renumbered, then p-xylene's
        let ortho = [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 0),
            (0, 6),
            (1, 7),
        ];
        let renum = [
            (7, 6),
            (6, 5),
            (5, 4),
            (4, 3),
            (3, 2),
            (2, 7),
            (7, 0),
            (6, 1),
        ];
        let para = [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 0),
            (0, 6),
            (3, 7),
        ];
        let h = wl_hash(8, &ortho, &mut s);
        assert_eq!(h, wl_hash(8, &renum, &mut s));
        assert_ne!(h, wl_hash(8, &para, &mut s));
    }
}
