/* molsift I/O tracer: an LD_PRELOAD library that counts, per file and per process, the POSIX and
 * STDIO calls Darshan counts, and writes one JSON log per process (docs/io-log-format.md).
 *
 * Off unless MOLSIFT_TRACER_DIR names a directory: then every call below is timed and counted,
 * and the process writes DIR/proc-<pid>-<start ns>.json when it exits, execs, calls _exit or dies
 * of a fatal signal. `molsift profile -- CMD` sets that up. The profiled program's results, errno
 * and exit status never change: every wrapper calls the real function first and restores errno. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- counters: Darshan's names without the module prefix (docs/io-log-format.md) ---- */
enum {
    C_OPENS, C_FDOPENS, C_DUPS, C_READS, C_WRITES, C_SEEKS, C_STATS, C_MMAPS, C_FSYNCS, C_FDSYNCS,
    C_FLUSHES, C_BYTES_READ, C_BYTES_WRITTEN, C_MAX_BYTE_READ, C_MAX_BYTE_WRITTEN, C_CONSEC_READS,
    C_CONSEC_WRITES, C_SEQ_READS, C_SEQ_WRITES, C_RW_SWITCHES, C_MEM_NOT_ALIGNED, C_FILE_NOT_ALIGNED,
    C_MAX_READ_TIME_SIZE, C_MAX_WRITE_TIME_SIZE, C_SIZE_READ_0, C_SIZE_WRITE_0 = C_SIZE_READ_0 + 10,
    NCOUNTERS = C_SIZE_WRITE_0 + 10
};
static const char *const COUNTER_NAMES[NCOUNTERS] = {
    "OPENS", "FDOPENS", "DUPS", "READS", "WRITES", "SEEKS", "STATS", "MMAPS", "FSYNCS", "FDSYNCS",
    "FLUSHES", "BYTES_READ", "BYTES_WRITTEN", "MAX_BYTE_READ", "MAX_BYTE_WRITTEN", "CONSEC_READS",
    "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES", "RW_SWITCHES", "MEM_NOT_ALIGNED", "FILE_NOT_ALIGNED",
    "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE",
    "SIZE_READ_0_100", "SIZE_READ_100_1K", "SIZE_READ_1K_10K", "SIZE_READ_10K_100K",
    "SIZE_READ_100K_1M", "SIZE_READ_1M_4M", "SIZE_READ_4M_10M", "SIZE_READ_10M_100M",
    "SIZE_READ_100M_1G", "SIZE_READ_1G_PLUS",
    "SIZE_WRITE_0_100", "SIZE_WRITE_100_1K", "SIZE_WRITE_1K_10K", "SIZE_WRITE_10K_100K",
    "SIZE_WRITE_100K_1M", "SIZE_WRITE_1M_4M", "SIZE_WRITE_4M_10M", "SIZE_WRITE_10M_100M",
    "SIZE_WRITE_100M_1G", "SIZE_WRITE_1G_PLUS",
};
enum {
    F_OPEN_START, F_READ_START, F_WRITE_START, F_CLOSE_START, F_OPEN_END, F_READ_END, F_WRITE_END,
    F_CLOSE_END, F_READ_TIME, F_WRITE_TIME, F_META_TIME, F_MAX_READ_TIME, F_MAX_WRITE_TIME, NFCOUNTERS
};
static const char *const FCOUNTER_NAMES[NFCOUNTERS] = {
    "F_OPEN_START_TIMESTAMP", "F_READ_START_TIMESTAMP", "F_WRITE_START_TIMESTAMP",
    "F_CLOSE_START_TIMESTAMP", "F_OPEN_END_TIMESTAMP", "F_READ_END_TIMESTAMP",
    "F_WRITE_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_READ_TIME", "F_WRITE_TIME", "F_META_TIME",
    "F_MAX_READ_TIME", "F_MAX_WRITE_TIME",
};
enum { MOD_POSIX, MOD_STDIO };
static const char *const MODULE_NAMES[] = {"POSIX", "STDIO"};

#define HEAT_BINS 32           /* time histogram of bytes: bins per record */
#define HEAT_FIRST_WIDTH 0.05  /* seconds per bin at start; doubled whenever time runs past */
#define MEM_ALIGNMENT 8        /* Darshan's default: buffers not on 8 bytes are "not aligned" */
#define MAX_FDS 65536          /* file descriptors at or above this are not traced */
#define MAX_RECORDS 131072     /* files per process; more are counted in dropped_records */
#define HASH_SLOTS (1 << 18)

typedef struct record {
    char *path;
    uint64_t hash;
    int module;
    int64_t c[NCOUNTERS];
    double f[NFCOUNTERS];
    int64_t last_byte_read, last_byte_written, file_size, file_alignment;
    int last_io;               /* 0 none, 1 read, 2 write: for RW_SWITCHES */
    int64_t heat_read[HEAT_BINS], heat_write[HEAT_BINS];
} record;

/* ---- process state (one per process image; reset in a fork child) ---- */
static int g_state;            /* 0 not initialised, 1 off, 2 on */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int tl_busy __attribute__((tls_model("initial-exec")));
static char g_dir[PATH_MAX];
static char g_log_name[128];
static char g_excludes[16][PATH_MAX / 4];  /* path prefixes not traced, without a final '/' */
static size_t g_exclude_len[16];
static int g_nexcludes;
static pid_t g_pid, g_ppid, g_forked_from;
static long g_rank = -1;
static struct timespec g_t0;   /* CLOCK_MONOTONIC at start: every timestamp is relative to it */
static double g_start_epoch;
static double g_heat_width = HEAT_FIRST_WIDTH;
static record **g_records;     /* MAX_RECORDS pointers, mmap'ed: never moves */
static int32_t *g_hash;        /* HASH_SLOTS record indexes + 1 */
static int g_nrecords;
static int64_t g_dropped_records, g_failed_opens, g_failed_stats;
static int32_t g_fd_posix[MAX_FDS], g_fd_stdio[MAX_FDS];  /* record index + 1, 0 = not traced */
static int64_t g_fd_offset[MAX_FDS], g_stdio_offset[MAX_FDS];
static volatile sig_atomic_t g_writing;

/* ---- the real functions: real_NAME, found with dlsym(RTLD_NEXT) ---- */
#define REAL_FUNCTIONS(X) \
    X(int, open, (const char *, int, ...)) \
    X(int, open64, (const char *, int, ...)) \
    X(int, openat, (int, const char *, int, ...)) \
    X(int, openat64, (int, const char *, int, ...)) \
    X(int, __open_2, (const char *, int)) \
    X(int, __open64_2, (const char *, int)) \
    X(int, __openat_2, (int, const char *, int)) \
    X(int, __openat64_2, (int, const char *, int)) \
    X(int, creat, (const char *, mode_t)) \
    X(int, creat64, (const char *, mode_t)) \
    X(int, close, (int)) \
    X(int, close_range, (unsigned, unsigned, int)) \
    X(int, dup, (int)) \
    X(int, dup2, (int, int)) \
    X(int, dup3, (int, int, int)) \
    X(ssize_t, read, (int, void *, size_t)) \
    X(ssize_t, __read_chk, (int, void *, size_t, size_t)) \
    X(ssize_t, pread, (int, void *, size_t, off_t)) \
    X(ssize_t, pread64, (int, void *, size_t, off_t)) \
    X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t)) \
    X(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t)) \
    X(ssize_t, readv, (int, const struct iovec *, int)) \
    X(ssize_t, preadv, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv64, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, preadv64v2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, write, (int, const void *, size_t)) \
    X(ssize_t, pwrite, (int, const void *, size_t, off_t)) \
    X(ssize_t, pwrite64, (int, const void *, size_t, off_t)) \
    X(ssize_t, writev, (int, const struct iovec *, int)) \
    X(ssize_t, pwritev, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev64, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off_t, int)) \
    X(off_t, lseek, (int, off_t, int)) \
    X(off_t, lseek64, (int, off_t, int)) \
    X(int, stat, (const char *, struct stat *)) \
    X(int, stat64, (const char *, struct stat64 *)) \
    X(int, lstat, (const char *, struct stat *)) \
    X(int, lstat64, (const char *, struct stat64 *)) \
    X(int, fstat, (int, struct stat *)) \
    X(int, fstat64, (int, struct stat64 *)) \
    X(int, fstatat, (int, const char *, struct stat *, int)) \
    X(int, fstatat64, (int, const char *, struct stat64 *, int)) \
    X(int, __xstat, (int, const char *, struct stat *)) \
    X(int, __xstat64, (int, const char *, struct stat64 *)) \
    X(int, __lxstat, (int, const char *, struct stat *)) \
    X(int, __lxstat64, (int, const char *, struct stat64 *)) \
    X(int, __fxstat, (int, int, struct stat *)) \
    X(int, __fxstat64, (int, int, struct stat64 *)) \
    X(int, __fxstatat, (int, int, const char *, struct stat *, int)) \
    X(int, __fxstatat64, (int, int, const char *, struct stat64 *, int)) \
    X(int, statx, (int, const char *, int, unsigned, struct statx *)) \
    X(int, access, (const char *, int)) \
    X(int, faccessat, (int, const char *, int, int)) \
    X(int, fsync, (int)) \
    X(int, fdatasync, (int)) \
    X(void *, mmap, (void *, size_t, int, int, int, off_t)) \
    X(void *, mmap64, (void *, size_t, int, int, int, off_t)) \
    X(FILE *, fopen, (const char *, const char *)) \
    X(FILE *, fopen64, (const char *, const char *)) \
    X(FILE *, fdopen, (int, const char *)) \
    X(FILE *, freopen, (const char *, const char *, FILE *)) \
    X(FILE *, freopen64, (const char *, const char *, FILE *)) \
    X(int, fclose, (FILE *)) \
    X(size_t, fread, (void *, size_t, size_t, FILE *)) \
    X(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *)) \
    X(size_t, fwrite, (const void *, size_t, size_t, FILE *)) \
    X(int, fputs, (const char *, FILE *)) \
    X(int, fputc, (int, FILE *)) \
    X(char *, fgets, (char *, int, FILE *)) \
    X(int, fgetc, (FILE *)) \
    X(int, vfprintf, (FILE *, const char *, va_list)) \
    X(int, fseek, (FILE *, long, int)) \
    X(int, fseeko, (FILE *, off_t, int)) \
    X(int, fseeko64, (FILE *, off_t, int)) \
    X(void, rewind, (FILE *)) \
    X(int, fflush, (FILE *)) \
    X(long, ftell, (FILE *)) \
    X(int, execve, (const char *, char *const[], char *const[])) \
    X(int, execv, (const char *, char *const[])) \
    X(int, execvp, (const char *, char *const[])) \
    X(int, execvpe, (const char *, char *const[], char *const[])) \
    X(int, fexecve, (int, char *const[], char *const[])) \
    X(void, _exit, (int)) \
    X(void, _Exit, (int)) \
    X(int, rename, (const char *, const char *)) \
    X(ssize_t, sendfile, (int, int, off_t *, size_t)) \
    X(ssize_t, sendfile64, (int, int, off_t *, size_t)) \
    X(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned)) \
    X(int, vprintf, (const char *, va_list)) \
    X(int, puts, (const char *)) \
    X(int, putc, (int, FILE *)) \
    X(int, getc, (FILE *))
#define DECLARE_REAL(ret, name, args) static ret(*real_##name) args;
REAL_FUNCTIONS(DECLARE_REAL)

#define RESOLVE(name) \
    do { if (UNLIKELY(!real_##name)) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name); } while (0)

#define RESOLVE_REAL(ret, name, args) RESOLVE(name);
static void resolve_all(void) { REAL_FUNCTIONS(RESOLVE_REAL) }

/* ---- time ---- */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - g_t0.tv_sec) + (double)(ts.tv_nsec - g_t0.tv_nsec) * 1e-9;
}

static void start_clock(void) {
    struct timespec rt;
    clock_gettime(CLOCK_MONOTONIC, &g_t0);
    clock_gettime(CLOCK_REALTIME, &rt);
    g_start_epoch = (double)rt.tv_sec + (double)rt.tv_nsec * 1e-9;
    snprintf(g_log_name, sizeof g_log_name, "proc-%d-%lld", (int)getpid(),
             (long long)rt.tv_sec * 1000000000LL + rt.tv_nsec);
}

/* ---- set-up ---- */
static void add_exclude(const char *prefix, size_t n) {
    while (n > 1 && prefix[n - 1] == '/') n--;  /* "/dev/" excludes /dev and /dev/... */
    if (n == 0 || n >= sizeof g_excludes[0] || g_nexcludes >= 16) return;
    memcpy(g_excludes[g_nexcludes], prefix, n);
    g_excludes[g_nexcludes][n] = 0;
    g_exclude_len[g_nexcludes++] = n;
}

static long env_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end == 0 && r >= 0) return r;
        }
    }
    return -1;
}

/* MOLSIFT_TRACER_<NAME>, or the older name MOLSIFT_IOTRACE_<NAME> when the new one is unset. */
static const char *tracer_env(const char *name, const char *old_name) {
    const char *v = getenv(name);
    return v ? v : getenv(old_name);
}

static void on_fatal_signal(int sig);
static void fork_prepare(void) { pthread_mutex_lock(&g_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&g_lock); }
static void fork_child(void);

static void install_signal_handlers(void) {
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGQUIT};
    const char *v = tracer_env("MOLSIFT_TRACER_SIGNALS", "MOLSIFT_IOTRACE_SIGNALS");
    if (v && strcmp(v, "0") == 0) return;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;  /* the program (or its parent) chose something: leave it */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

static void init_once(void) {
    int saved = errno;
    resolve_all();
    const char *dir = tracer_env("MOLSIFT_TRACER_DIR", "MOLSIFT_IOTRACE_DIR");
    if (!dir || !*dir || strlen(dir) >= sizeof g_dir - 2 ||
        (g_records = real_mmap(NULL, MAX_RECORDS * sizeof(record *), PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED ||
        (g_hash = real_mmap(NULL, HASH_SLOTS * sizeof(int32_t), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED) {
        g_state = 1;
        errno = saved;
        return;
    }
    strcpy(g_dir, dir);
    size_t n = strlen(g_dir);
    while (n > 1 && g_dir[n - 1] == '/') g_dir[--n] = 0;
    add_exclude(g_dir, n);
    const char *ex = tracer_env("MOLSIFT_TRACER_EXCLUDE", "MOLSIFT_IOTRACE_EXCLUDE");
    if (!ex) ex = "/proc/:/sys/:/dev/";
    for (const char *p = ex; *p;) {
        const char *q = strchr(p, ':');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        add_exclude(p, len);
        p += len + (q ? 1 : 0);
    }
    g_pid = getpid();
    g_ppid = getppid();
    g_rank = env_rank();
    start_clock();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    install_signal_handlers();
    g_state = 2;
    errno = saved;
}

static inline int tracing(void) {
    if (UNLIKELY(g_state == 0)) pthread_once(&g_once, init_once);
    return g_state == 2 && !tl_busy;
}

__attribute__((constructor)) static void tracer_init(void) { (void)tracing(); }

/* ---- paths: absolute, lexically cleaned (like Darshan), or rejected when excluded ---- */
static void clean_path(char *p) {
    char *out = p, *in = p;
    while (*in) {
        if (in[0] == '/' && in[1] == '/') { in++; continue; }
        if (in[0] == '/' && in[1] == '.' && (in[2] == '/' || in[2] == 0)) { in += 2; continue; }
        if (in[0] == '/' && in[1] == '.' && in[2] == '.' && (in[3] == '/' || in[3] == 0)) {
            while (out > p && *--out != '/') {}
            in += 3;
            continue;
        }
        *out++ = *in++;
    }
    if (out == p) *out++ = '/';
    *out = 0;
}

/* Writes the absolute path of PATH (relative to DIRFD) to OUT; 0 when it must not be traced. */
static int abs_path(int dirfd, const char *path, char *out) {
    size_t n;
    if (!path || !*path) return 0;
    if (path[0] == '/') {
        n = 0;
    } else if (dirfd == AT_FDCWD) {
        if (!getcwd(out, PATH_MAX)) return 0;
        n = strlen(out);
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t r = readlink(link, out, PATH_MAX - 1);
        if (r <= 0) return 0;
        n = (size_t)r;
    }
    size_t len = strlen(path);
    if (n + len + 2 >= PATH_MAX) return 0;
    if (n) out[n++] = '/';
    memcpy(out + n, path, len + 1);
    for (const char *c = out; *c; c++)  /* one pass: clean only paths that need it */
        if (c[0] == '/' && (c[1] == '/' || c[1] == '.')) { clean_path(out); break; }
    for (int i = 0; i < g_nexcludes; i++) {  /* the prefix itself and everything below it */
        size_t el = g_exclude_len[i];
        if (memcmp(out, g_excludes[i], el) == 0 && (out[el] == 0 || out[el] == '/')) return 0;
    }
    return 1;
}

/* ---- the record table (call with g_lock held) ---- */
static uint64_t hash_path(const char *s, int module) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)module;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

/* Index of the record for (PATH, MODULE), created if new; -1 when the table is full. */
static int record_index(const char *path, int module) {
    uint64_t h = hash_path(path, module);
    size_t slot = h & (HASH_SLOTS - 1);
    for (;;) {
        int32_t i = g_hash[slot];
        if (i == 0) break;
        record *r = g_records[i - 1];
        if (r->hash == h && r->module == module && strcmp(r->path, path) == 0) return i - 1;
        slot = (slot + 1) & (HASH_SLOTS - 1);
    }
    if (g_nrecords >= MAX_RECORDS) { g_dropped_records++; return -1; }
    record *r = calloc(1, sizeof *r);
    char *copy = r ? strdup(path) : NULL;
    if (!copy) { free(r); g_dropped_records++; return -1; }
    r->path = copy;
    r->hash = h;
    r->module = module;
    g_records[g_nrecords] = r;
    g_hash[slot] = ++g_nrecords;
    return g_nrecords - 1;
}

static inline record *fd_record(const int32_t *table, int fd) {
    if (fd < 0 || fd >= MAX_FDS || table[fd] == 0) return NULL;
    return g_records[table[fd] - 1];
}

static inline int size_bin(int64_t n) {
    static const int64_t edges[9] = {100, 1024, 10240, 102400, 1048576, 4194304, 10485760,
                                     104857600, 1073741824};
    int b = 0;
    while (b < 9 && n > edges[b]) b++;
    return b;
}

static void heat_add(record *r, double t, int64_t bytes, int is_write) {
    while (t >= g_heat_width * HEAT_BINS) {  /* double every record's bin width */
        for (int i = 0; i < g_nrecords; i++) {
            record *x = g_records[i];
            for (int b = 0; b < HEAT_BINS / 2; b++) {
                x->heat_read[b] = x->heat_read[2 * b] + x->heat_read[2 * b + 1];
                x->heat_write[b] = x->heat_write[2 * b] + x->heat_write[2 * b + 1];
            }
            memset(x->heat_read + HEAT_BINS / 2, 0, sizeof x->heat_read / 2);
            memset(x->heat_write + HEAT_BINS / 2, 0, sizeof x->heat_write / 2);
        }
        g_heat_width *= 2;
    }
    int b = t < 0 ? 0 : (int)(t / g_heat_width);
    (is_write ? r->heat_write : r->heat_read)[b] += bytes;
}

static inline void meta_time(record *r, double t1, double t2) { r->f[F_META_TIME] += t2 - t1; }

/* One read or write of RET bytes at THIS_OFFSET: Darshan's POSIX_RECORD_READ/WRITE rules. */
static void count_io(record *r, int is_write, int64_t ret, int64_t off, int aligned, double t1,
                     double t2) {
    int64_t *last = is_write ? &r->last_byte_written : &r->last_byte_read;
    double el = t2 - t1;
    if (off > *last) r->c[is_write ? C_SEQ_WRITES : C_SEQ_READS]++;
    if (off == *last + 1) r->c[is_write ? C_CONSEC_WRITES : C_CONSEC_READS]++;
    *last = off + ret - 1;
    int64_t *maxb = &r->c[is_write ? C_MAX_BYTE_WRITTEN : C_MAX_BYTE_READ];
    if (*maxb < off + ret - 1) *maxb = off + ret - 1;
    if (is_write && off + ret > r->file_size) r->file_size = off + ret;
    r->c[is_write ? C_BYTES_WRITTEN : C_BYTES_READ] += ret;
    r->c[is_write ? C_WRITES : C_READS]++;
    r->c[(is_write ? C_SIZE_WRITE_0 : C_SIZE_READ_0) + size_bin(ret)]++;
    if (r->last_io && r->last_io != (is_write ? 2 : 1)) r->c[C_RW_SWITCHES]++;
    r->last_io = is_write ? 2 : 1;
    if (r->module == MOD_POSIX) {  /* alignment is a POSIX counter only, as in Darshan */
        if (!aligned) r->c[C_MEM_NOT_ALIGNED]++;
        if (r->file_alignment > 0 && off % r->file_alignment != 0) r->c[C_FILE_NOT_ALIGNED]++;
    }
    double *start = &r->f[is_write ? F_WRITE_START : F_READ_START];
    if (*start == 0) *start = t1;
    r->f[is_write ? F_WRITE_END : F_READ_END] = t2;
    r->f[is_write ? F_WRITE_TIME : F_READ_TIME] += el;
    if (r->f[is_write ? F_MAX_WRITE_TIME : F_MAX_READ_TIME] < el) {
        r->f[is_write ? F_MAX_WRITE_TIME : F_MAX_READ_TIME] = el;
        r->c[is_write ? C_MAX_WRITE_TIME_SIZE : C_MAX_READ_TIME_SIZE] = ret;
    }
    heat_add(r, t1, ret, is_write);
}

/* ---- events (each takes the lock itself) ---- */
static void on_open(int dirfd, const char *path, int flags, int fd, int module, int64_t *offsets,
                    int32_t *table, double t1, double t2) {
    char full[PATH_MAX];
    if (fd < 0) {
        __atomic_fetch_add(&g_failed_opens, 1, __ATOMIC_RELAXED);
        return;
    }
    if (fd >= MAX_FDS) return;
    tl_busy = 1;
    int traced = abs_path(dirfd, path, full);
    struct stat st;
    int have_st = traced && real_fstat(fd, &st) == 0;  /* size and block size (alignment) */
    pthread_mutex_lock(&g_lock);
    int i = traced ? record_index(full, module) : -1;
    table[fd] = i + 1;
    if (i >= 0) {
        record *r = g_records[i];
        if (have_st) {
            if (r->file_alignment == 0) r->file_alignment = st.st_blksize;
            if (st.st_size > r->file_size) r->file_size = st.st_size;
        }
        r->c[C_OPENS]++;
        if (r->f[F_OPEN_START] == 0) r->f[F_OPEN_START] = t1;
        r->f[F_OPEN_END] = t2;
        meta_time(r, t1, t2);
        offsets[fd] = (flags & O_APPEND) && have_st ? st.st_size : 0;
    }
    pthread_mutex_unlock(&g_lock);
    tl_busy = 0;
}

static void on_close(int32_t *table, int fd, double t1, double t2) {
    pthread_mutex_lock(&g_lock);
    record *r = fd_record(table, fd);
    if (r) {
        if (r->f[F_CLOSE_START] == 0) r->f[F_CLOSE_START] = t1;
        r->f[F_CLOSE_END] = t2;
        meta_time(r, t1, t2);
        table[fd] = 0;
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_io(int32_t *table, int64_t *offsets, int fd, int is_write, int64_t ret,
                  int positional, int64_t off, const void *buf, double t1, double t2) {
    if (ret < 0) return;
    pthread_mutex_lock(&g_lock);
    record *r = fd_record(table, fd);
    if (r) {
        int64_t this_off = positional ? off : offsets[fd];
        if (!positional) offsets[fd] = this_off + ret;
        count_io(r, is_write, ret, this_off, ((uintptr_t)buf % MEM_ALIGNMENT) == 0, t1, t2);
    }
    pthread_mutex_unlock(&g_lock);
}

/* A counter bump on a traced fd: seeks (NEW_OFFSET >= 0 sets the offset), fsyncs, mmaps, stats. */
static void on_fd_event(int32_t *table, int64_t *offsets, int fd, int counter, int64_t new_offset,
                        int write_time, double t1, double t2) {
    pthread_mutex_lock(&g_lock);
    record *r = fd_record(table, fd);
    if (r) {
        r->c[counter]++;
        if (new_offset >= 0) offsets[fd] = new_offset;
        if (write_time) r->f[F_WRITE_TIME] += t2 - t1;
        else meta_time(r, t1, t2);
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_path_stat(int dirfd, const char *path, int ret, int64_t size, int regular,
                         double t1, double t2) {
    char full[PATH_MAX];
    if (ret != 0) {
        __atomic_fetch_add(&g_failed_stats, 1, __ATOMIC_RELAXED);
        return;
    }
    tl_busy = 1;
    if (abs_path(dirfd, path, full)) {
        pthread_mutex_lock(&g_lock);
        int i = record_index(full, MOD_POSIX);
        if (i >= 0) {
            record *r = g_records[i];
            r->c[C_STATS]++;
            meta_time(r, t1, t2);
            if (regular && size > r->file_size) r->file_size = size;
        }
        pthread_mutex_unlock(&g_lock);
    }
    tl_busy = 0;
}

static void on_fd_stat(int fd, int ret, int64_t size, int regular, double t1, double t2) {
    if (ret != 0) return;
    pthread_mutex_lock(&g_lock);
    record *r = fd_record(g_fd_posix, fd);
    if (r) {
        r->c[C_STATS]++;
        meta_time(r, t1, t2);
        if (regular && size > r->file_size) r->file_size = size;
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_dup(int oldfd, int newfd) {
    if (newfd < 0 || newfd >= MAX_FDS) return;
    pthread_mutex_lock(&g_lock);
    record *r = fd_record(g_fd_posix, oldfd);
    g_fd_posix[newfd] = r ? g_fd_posix[oldfd] : 0;
    if (r) {
        g_fd_offset[newfd] = g_fd_offset[oldfd];
        r->c[C_DUPS]++;
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---- the log: JSON written with a fixed buffer (no malloc: safe enough in a signal handler) ---- */
static char w_buf[1 << 16];
static size_t w_len;
static int w_fd = -1;

static void w_flush(void) {
    size_t off = 0;
    while (off < w_len && w_fd >= 0) {
        ssize_t n = real_write(w_fd, w_buf + off, w_len - off);
        if (n <= 0) { if (n < 0 && errno == EINTR) continue; break; }
        off += (size_t)n;
    }
    w_len = 0;
}
static void w_raw(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (w_len == sizeof w_buf) w_flush();
        w_buf[w_len++] = s[i];
    }
}
static void w_str(const char *s) { w_raw(s, strlen(s)); }
static void w_int(int64_t v) {
    char t[32];
    w_raw(t, (size_t)snprintf(t, sizeof t, "%lld", (long long)v));
}
static void w_dbl(double v) {
    char t[40];
    w_raw(t, (size_t)snprintf(t, sizeof t, "%.9g", v));
}
/* Length of the valid UTF-8 sequence at S, or 0. */
static int utf8_len(const unsigned char *s) {
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}
/* A JSON string; bytes that are not UTF-8 become \udcXX, as Python's os.fsdecode does. */
static void w_jstr(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    char t[8];
    w_raw("\"", 1);
    while (*p) {
        if (*p == '"' || *p == '\\') { w_raw("\\", 1); w_raw((const char *)p, 1); p++; }
        else if (*p < 0x20) { w_raw(t, (size_t)snprintf(t, sizeof t, "\\u%04x", *p)); p++; }
        else if (*p < 0x80) { w_raw((const char *)p, 1); p++; }
        else {
            int n = utf8_len(p);
            if (n) { w_raw((const char *)p, (size_t)n); p += n; }
            else { w_raw(t, (size_t)snprintf(t, sizeof t, "\\udc%02x", *p)); p++; }
        }
    }
    w_raw("\"", 1);
}
static void w_key(const char *k) { w_jstr(k); w_raw(":", 1); }

static void w_file_text(const char *path, int as_argv) {
    char buf[8192];
    int fd = real_open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? real_read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) real_close(fd);
    if (n < 0) n = 0;
    buf[n] = 0;
    if (!as_argv) { w_jstr(buf); return; }
    w_raw("[", 1);
    for (ssize_t i = 0; i < n;) {
        if (i) w_raw(",", 1);
        w_jstr(buf + i);
        i += (ssize_t)strlen(buf + i) + 1;
    }
    w_raw("]", 1);
}

static int record_active(const record *r) {
    for (int k = 0; k < NCOUNTERS; k++)
        if (r->c[k]) return 1;
    return 0;
}

/* A heatmap row without its trailing empty bins. */
static void w_bins(const int64_t *bins) {
    int n = HEAT_BINS;
    while (n > 0 && bins[n - 1] == 0) n--;
    w_raw("[", 1);
    for (int b = 0; b < n; b++) { if (b) w_raw(",", 1); w_int(bins[b]); }
    w_raw("]", 1);
}

static void w_record(const record *r) {
    w_raw("{", 1);
    w_key("module"); w_jstr(MODULE_NAMES[r->module]);
    w_raw(",", 1); w_key("file"); w_jstr(r->path);
    w_raw(",", 1); w_key("file_size"); w_int(r->file_size);
    w_raw(",", 1); w_key("counters"); w_raw("{", 1);
    int first = 1;
    for (int k = 0; k < NCOUNTERS; k++) {
        if (!r->c[k]) continue;
        if (!first) w_raw(",", 1);
        first = 0;
        w_key(COUNTER_NAMES[k]); w_int(r->c[k]);
    }
    if (r->module == MOD_POSIX && (r->c[C_READS] || r->c[C_WRITES])) {
        w_str(",\"MEM_ALIGNMENT\":"); w_int(MEM_ALIGNMENT);
        w_str(",\"FILE_ALIGNMENT\":"); w_int(r->file_alignment);
    }
    w_str("},\"fcounters\":{");
    first = 1;
    for (int k = 0; k < NFCOUNTERS; k++) {
        if (r->f[k] == 0) continue;
        if (!first) w_raw(",", 1);
        first = 0;
        w_key(FCOUNTER_NAMES[k]); w_dbl(r->f[k]);
    }
    w_str("},\"heatmap\":{\"read\":");
    w_bins(r->heat_read);
    w_str(",\"write\":");
    w_bins(r->heat_write);
    w_str("}}");
}

/* Writes this process's log (tmp file + rename, so a reader never sees half a log). */
static void write_log(const char *how) {
    char tmp[PATH_MAX + 160], final[PATH_MAX + 160];
    if (g_state != 2 || g_writing || getpid() != g_pid) return;
    g_writing = 1;
    int saved = errno;
    tl_busy = 1;
    snprintf(final, sizeof final, "%s/%s.json", g_dir, g_log_name);
    snprintf(tmp, sizeof tmp, "%s/%s.json.tmp", g_dir, g_log_name);
    w_fd = real_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w_fd >= 0) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        w_len = 0;
        w_str("{\"format\":\"molsift-iolog\",\"version\":1,\"job\":null,\"processes\":[{");
        w_key("pid"); w_int(g_pid);
        w_str(",\"ppid\":"); w_int(g_ppid);
        w_str(",\"forked_from\":"); if (g_forked_from) w_int(g_forked_from); else w_str("null");
        w_str(",\"rank\":"); if (g_rank >= 0) w_int(g_rank); else w_str("null");
        w_str(",\"hostname\":"); w_jstr(host);
        w_str(",\"exe\":");
        char exe[PATH_MAX] = "";
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        w_jstr(exe);
        w_str(",\"argv\":"); w_file_text("/proc/self/cmdline", 1);
        char t[40];
        w_str(",\"start_time\":"); w_raw(t, (size_t)snprintf(t, sizeof t, "%.6f", g_start_epoch));
        w_str(",\"wall_seconds\":"); w_dbl(now());
        w_str(",\"ended_by\":"); w_jstr(how);
        w_str(",\"failed_opens\":"); w_int(g_failed_opens);
        w_str(",\"failed_stats\":"); w_int(g_failed_stats);
        w_str(",\"dropped_records\":"); w_int(g_dropped_records);
        w_str(",\"heatmap_bin_seconds\":"); w_dbl(g_heat_width);
        w_str(",\"records\":[");
        int first = 1;
        for (int i = 0; i < g_nrecords; i++) {
            if (!record_active(g_records[i])) continue;
            if (!first) w_raw(",", 1);
            first = 0;
            w_record(g_records[i]);
        }
        w_str("]}]}\n");
        w_flush();
        real_close(w_fd);
        w_fd = -1;
        real_rename(tmp, final);
    }
    tl_busy = 0;
    errno = saved;
    g_writing = 0;
}

static void write_log_locked(const char *how) {
    if (g_state != 2) return;
    pthread_mutex_lock(&g_lock);
    write_log(how);
    pthread_mutex_unlock(&g_lock);
}

__attribute__((destructor)) static void tracer_fini(void) { write_log_locked("exit"); }

static void on_fatal_signal(int sig) {
    char how[32];
    snprintf(how, sizeof how, "signal %d", sig);
    /* no lock: the interrupted thread may hold it; a log slightly out of step beats no log */
    write_log(how);
    raise(sig);  /* SA_RESETHAND restored the default action: the program dies as it would have */
}

static void fork_child(void) {
    pthread_mutex_init(&g_lock, NULL);
    /* The child keeps the parent's open files (fds stay traced) but starts its counts at zero. */
    for (int i = 0; i < g_nrecords; i++) {
        record *r = g_records[i];
        memset(r->c, 0, sizeof r->c);
        memset(r->f, 0, sizeof r->f);
        memset(r->heat_read, 0, sizeof r->heat_read);
        memset(r->heat_write, 0, sizeof r->heat_write);
        r->last_byte_read = r->last_byte_written = 0;
        r->last_io = 0;
    }
    g_failed_opens = g_failed_stats = g_dropped_records = 0;
    g_forked_from = g_pid;
    g_pid = getpid();
    g_ppid = getppid();
    g_heat_width = HEAT_FIRST_WIDTH;
    start_clock();
}

/* ---- wrappers ---- */
#define TIMED(call) double t1 = now(); __typeof__(call) ret = (call); double t2 = now(); int e = errno
#define MODE_ARG(flags) \
    mode_t mode = 0; \
    if (((flags) & O_CREAT) || ((flags) & __O_TMPFILE) == __O_TMPFILE) { \
        va_list ap; va_start(ap, flags); mode = (mode_t)va_arg(ap, int); va_end(ap); }

#define OPEN_WRAPPER(name, dirfd_expr, call)                                          \
    {                                                                                 \
        RESOLVE(name);                                                                \
        if (!tracing()) return call;                                                  \
        TIMED(call);                                                                  \
        on_open(dirfd_expr, path, flags, ret, MOD_POSIX, g_fd_offset, g_fd_posix, t1, t2); \
        errno = e;                                                                    \
        return ret;                                                                   \
    }

EXPORT int open(const char *path, int flags, ...) {
    MODE_ARG(flags) OPEN_WRAPPER(open, AT_FDCWD, real_open(path, flags, mode))
}
EXPORT int open64(const char *path, int flags, ...) {
    MODE_ARG(flags) OPEN_WRAPPER(open64, AT_FDCWD, real_open64(path, flags, mode))
}
EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags) OPEN_WRAPPER(openat, dirfd, real_openat(dirfd, path, flags, mode))
}
EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags) OPEN_WRAPPER(openat64, dirfd, real_openat64(dirfd, path, flags, mode))
}
EXPORT int __open_2(const char *path, int flags) OPEN_WRAPPER(__open_2, AT_FDCWD, real___open_2(path, flags))
EXPORT int __open64_2(const char *path, int flags) OPEN_WRAPPER(__open64_2, AT_FDCWD, real___open64_2(path, flags))
EXPORT int __openat_2(int dirfd, const char *path, int flags) OPEN_WRAPPER(__openat_2, dirfd, real___openat_2(dirfd, path, flags))
EXPORT int __openat64_2(int dirfd, const char *path, int flags) OPEN_WRAPPER(__openat64_2, dirfd, real___openat64_2(dirfd, path, flags))
EXPORT int creat(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_WRAPPER(creat, AT_FDCWD, real_creat(path, mode))
}
EXPORT int creat64(const char *path, mode_t mode) {
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    OPEN_WRAPPER(creat64, AT_FDCWD, real_creat64(path, mode))
}

EXPORT int close(int fd) {
    RESOLVE(close);
    if (!tracing() || !fd_record(g_fd_posix, fd)) return real_close(fd);
    TIMED(real_close(fd));
    on_close(g_fd_posix, fd, t1, t2);
    errno = e;
    return ret;
}

EXPORT int close_range(unsigned first, unsigned last, int flags) {
    RESOLVE(close_range);
    int ret = real_close_range(first, last, flags);
    if (ret == 0 && g_state == 2 && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */)) {
        int e = errno;
        pthread_mutex_lock(&g_lock);
        for (unsigned fd = first; fd <= last && fd < MAX_FDS; fd++) g_fd_posix[fd] = g_fd_stdio[fd] = 0;
        pthread_mutex_unlock(&g_lock);
        errno = e;
    }
    return ret;
}

#define DUP_WRAPPER(name, oldfd, call)                   \
    {                                                    \
        RESOLVE(name);                                   \
        int ret = call;                                  \
        if (tracing() && ret >= 0) {                     \
            int e = errno;                               \
            on_dup(oldfd, ret);                          \
            errno = e;                                   \
        }                                                \
        return ret;                                      \
    }
EXPORT int dup(int fd) DUP_WRAPPER(dup, fd, real_dup(fd))
EXPORT int dup2(int fd, int fd2) DUP_WRAPPER(dup2, fd, real_dup2(fd, fd2))
EXPORT int dup3(int fd, int fd2, int flags) DUP_WRAPPER(dup3, fd, real_dup3(fd, fd2, flags))

#define IO_WRAPPER(name, is_write, positional, off, buf, call)                            \
    {                                                                                    \
        RESOLVE(name);                                                                   \
        if (!tracing() || !fd_record(g_fd_posix, fd)) return call;                       \
        TIMED(call);                                                                     \
        on_io(g_fd_posix, g_fd_offset, fd, is_write, ret, positional, off, buf, t1, t2); \
        errno = e;                                                                       \
        return ret;                                                                      \
    }
EXPORT ssize_t read(int fd, void *buf, size_t n) IO_WRAPPER(read, 0, 0, 0, buf, real_read(fd, buf, n))
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t bl) IO_WRAPPER(__read_chk, 0, 0, 0, buf, real___read_chk(fd, buf, n, bl))
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t o) IO_WRAPPER(pread, 0, 1, o, buf, real_pread(fd, buf, n, o))
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t o) IO_WRAPPER(pread64, 0, 1, o, buf, real_pread64(fd, buf, n, o))
EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t o, size_t bl) IO_WRAPPER(__pread_chk, 0, 1, o, buf, real___pread_chk(fd, buf, n, o, bl))
EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t o, size_t bl) IO_WRAPPER(__pread64_chk, 0, 1, o, buf, real___pread64_chk(fd, buf, n, o, bl))
EXPORT ssize_t write(int fd, const void *buf, size_t n) IO_WRAPPER(write, 1, 0, 0, buf, real_write(fd, buf, n))
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t o) IO_WRAPPER(pwrite, 1, 1, o, buf, real_pwrite(fd, buf, n, o))
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t o) IO_WRAPPER(pwrite64, 1, 1, o, buf, real_pwrite64(fd, buf, n, o))

/* Vector calls: ssize_t results; the buffer alignment checked is the first one's (as Darshan). */
#define IOV_BUF (iovcnt > 0 ? iov[0].iov_base : NULL)
EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt) IO_WRAPPER(readv, 0, 0, 0, IOV_BUF, real_readv(fd, iov, iovcnt))
EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) IO_WRAPPER(writev, 1, 0, 0, IOV_BUF, real_writev(fd, iov, iovcnt))
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t o) IO_WRAPPER(preadv, 0, 1, o, IOV_BUF, real_preadv(fd, iov, iovcnt, o))
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off_t o) IO_WRAPPER(preadv64, 0, 1, o, IOV_BUF, real_preadv64(fd, iov, iovcnt, o))
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t o) IO_WRAPPER(pwritev, 1, 1, o, IOV_BUF, real_pwritev(fd, iov, iovcnt, o))
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t o) IO_WRAPPER(pwritev64, 1, 1, o, IOV_BUF, real_pwritev64(fd, iov, iovcnt, o))
/* preadv2/pwritev2 with offset -1 use (and move) the file offset, like readv/writev. */
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t o, int fl) IO_WRAPPER(preadv2, 0, o != -1, o, IOV_BUF, real_preadv2(fd, iov, iovcnt, o, fl))
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt, off_t o, int fl) IO_WRAPPER(preadv64v2, 0, o != -1, o, IOV_BUF, real_preadv64v2(fd, iov, iovcnt, o, fl))
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t o, int fl) IO_WRAPPER(pwritev2, 1, o != -1, o, IOV_BUF, real_pwritev2(fd, iov, iovcnt, o, fl))
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off_t o, int fl) IO_WRAPPER(pwritev64v2, 1, o != -1, o, IOV_BUF, real_pwritev64v2(fd, iov, iovcnt, o, fl))

/* In-kernel copies: a read of the source and a write of the destination, RET bytes each. */
static void on_copy(int in_fd, const off_t *in_off, int out_fd, const off_t *out_off,
                    ssize_t ret, double t1, double t2) {
    on_io(g_fd_posix, g_fd_offset, in_fd, 0, ret, in_off != NULL, in_off ? *in_off - ret : 0, NULL,
          t1, t2);
    on_io(g_fd_posix, g_fd_offset, out_fd, 1, ret, out_off != NULL, out_off ? *out_off - ret : 0,
          NULL, t1, t2);
}
#define COPY_WRAPPER(name, in_off, out_off, call)                                         \
    {                                                                                     \
        RESOLVE(name);                                                                    \
        if (!tracing() || (!fd_record(g_fd_posix, in_fd) && !fd_record(g_fd_posix, out_fd))) \
            return call;                                                                  \
        TIMED(call);                                                                      \
        on_copy(in_fd, in_off, out_fd, out_off, ret, t1, t2);                            \
        errno = e;                                                                        \
        return ret;                                                                       \
    }
EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *o, size_t n) COPY_WRAPPER(sendfile, o, NULL, real_sendfile(out_fd, in_fd, o, n))
EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *o, size_t n) COPY_WRAPPER(sendfile64, o, NULL, real_sendfile64(out_fd, in_fd, o, n))
EXPORT ssize_t copy_file_range(int in_fd, off_t *in_o, int out_fd, off_t *out_o, size_t n, unsigned fl) COPY_WRAPPER(copy_file_range, in_o, out_o, real_copy_file_range(in_fd, in_o, out_fd, out_o, n, fl))

#define FD_EVENT_WRAPPER(name, counter, set_offset, write_time, call)                  \
    {                                                                                  \
        RESOLVE(name);                                                                 \
        if (!tracing() || !fd_record(g_fd_posix, fd)) return call;                     \
        TIMED(call);                                                                   \
        if (ret != (__typeof__(ret))-1)                                               \
            on_fd_event(g_fd_posix, g_fd_offset, fd, counter, set_offset ? (int64_t)(intptr_t)ret : -1, \
                        write_time, t1, t2);                                           \
        errno = e;                                                                     \
        return ret;                                                                    \
    }
EXPORT off_t lseek(int fd, off_t o, int whence) FD_EVENT_WRAPPER(lseek, C_SEEKS, 1, 0, real_lseek(fd, o, whence))
EXPORT off_t lseek64(int fd, off_t o, int whence) FD_EVENT_WRAPPER(lseek64, C_SEEKS, 1, 0, real_lseek64(fd, o, whence))
EXPORT int fsync(int fd) FD_EVENT_WRAPPER(fsync, C_FSYNCS, 0, 1, real_fsync(fd))
EXPORT int fdatasync(int fd) FD_EVENT_WRAPPER(fdatasync, C_FDSYNCS, 0, 1, real_fdatasync(fd))

#define MMAP_WRAPPER(name)                                                                 \
    EXPORT void *name(void *addr, size_t len, int prot, int flags, int fd, off_t o) {     \
        RESOLVE(name);                                                                     \
        if (!tracing() || !fd_record(g_fd_posix, fd)) return real_##name(addr, len, prot, flags, fd, o); \
        TIMED(real_##name(addr, len, prot, flags, fd, o));                                \
        if (ret != MAP_FAILED) on_fd_event(g_fd_posix, g_fd_offset, fd, C_MMAPS, -1, 0, t1, t2); \
        errno = e;                                                                         \
        return ret;                                                                        \
    }
MMAP_WRAPPER(mmap)
MMAP_WRAPPER(mmap64)

/* stat family: path stats count on the path's record (created if new), fd stats on the fd's. */
#define PATH_STAT_WRAPPER(name, dirfd, path, st, call)                                    \
    {                                                                                     \
        RESOLVE(name);                                                                    \
        if (!tracing()) return call;                                                      \
        TIMED(call);                                                                      \
        on_path_stat(dirfd, path, ret, ret == 0 ? (int64_t)(st)->st_size : 0,            \
                     ret == 0 && S_ISREG((st)->st_mode), t1, t2);                         \
        errno = e;                                                                        \
        return ret;                                                                       \
    }
#define FD_STAT_WRAPPER(name, fd, st, call)                                               \
    {                                                                                     \
        RESOLVE(name);                                                                    \
        if (!tracing() || !fd_record(g_fd_posix, fd)) return call;                       \
        TIMED(call);                                                                      \
        on_fd_stat(fd, ret, ret == 0 ? (int64_t)(st)->st_size : 0,                       \
                   ret == 0 && S_ISREG((st)->st_mode), t1, t2);                           \
        errno = e;                                                                        \
        return ret;                                                                       \
    }
EXPORT int stat(const char *path, struct stat *st) PATH_STAT_WRAPPER(stat, AT_FDCWD, path, st, real_stat(path, st))
EXPORT int stat64(const char *path, struct stat64 *st) PATH_STAT_WRAPPER(stat64, AT_FDCWD, path, st, real_stat64(path, st))
EXPORT int lstat(const char *path, struct stat *st) PATH_STAT_WRAPPER(lstat, AT_FDCWD, path, st, real_lstat(path, st))
EXPORT int lstat64(const char *path, struct stat64 *st) PATH_STAT_WRAPPER(lstat64, AT_FDCWD, path, st, real_lstat64(path, st))
EXPORT int __xstat(int v, const char *path, struct stat *st) PATH_STAT_WRAPPER(__xstat, AT_FDCWD, path, st, real___xstat(v, path, st))
EXPORT int __xstat64(int v, const char *path, struct stat64 *st) PATH_STAT_WRAPPER(__xstat64, AT_FDCWD, path, st, real___xstat64(v, path, st))
EXPORT int __lxstat(int v, const char *path, struct stat *st) PATH_STAT_WRAPPER(__lxstat, AT_FDCWD, path, st, real___lxstat(v, path, st))
EXPORT int __lxstat64(int v, const char *path, struct stat64 *st) PATH_STAT_WRAPPER(__lxstat64, AT_FDCWD, path, st, real___lxstat64(v, path, st))
EXPORT int fstat(int fd, struct stat *st) FD_STAT_WRAPPER(fstat, fd, st, real_fstat(fd, st))
EXPORT int fstat64(int fd, struct stat64 *st) FD_STAT_WRAPPER(fstat64, fd, st, real_fstat64(fd, st))
EXPORT int __fxstat(int v, int fd, struct stat *st) FD_STAT_WRAPPER(__fxstat, fd, st, real___fxstat(v, fd, st))
EXPORT int __fxstat64(int v, int fd, struct stat64 *st) FD_STAT_WRAPPER(__fxstat64, fd, st, real___fxstat64(v, fd, st))

/* fstatat with AT_EMPTY_PATH and "" (or NULL, for statx) is an fstat of DIRFD. The headers say
 * PATH is never NULL; the build uses -fno-delete-null-pointer-checks so this test is kept. */
__attribute__((noinline)) static int is_empty(const char *path) { return !path || !*path; }

#define AT_WRAPPER(name, call, st_size, st_mode)                                          \
    {                                                                                     \
        RESOLVE(name);                                                                    \
        if (!tracing()) return call;                                                      \
        int by_fd = (flags & AT_EMPTY_PATH) && is_empty(path);                             \
        if (by_fd && !fd_record(g_fd_posix, dirfd)) return call;                         \
        TIMED(call);                                                                      \
        int64_t size = ret == 0 ? (int64_t)(st_size) : 0;                               \
        int regular = ret == 0 && S_ISREG(st_mode);                                       \
        if (by_fd) on_fd_stat(dirfd, ret, size, regular, t1, t2);                        \
        else on_path_stat(dirfd, path, ret, size, regular, t1, t2);                      \
        errno = e;                                                                        \
        return ret;                                                                       \
    }
EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags) AT_WRAPPER(fstatat, real_fstatat(dirfd, path, st, flags), st->st_size, st->st_mode)
EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) AT_WRAPPER(fstatat64, real_fstatat64(dirfd, path, st, flags), st->st_size, st->st_mode)
EXPORT int __fxstatat(int v, int dirfd, const char *path, struct stat *st, int flags) AT_WRAPPER(__fxstatat, real___fxstatat(v, dirfd, path, st, flags), st->st_size, st->st_mode)
EXPORT int __fxstatat64(int v, int dirfd, const char *path, struct stat64 *st, int flags) AT_WRAPPER(__fxstatat64, real___fxstatat64(v, dirfd, path, st, flags), st->st_size, st->st_mode)
EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st) AT_WRAPPER(statx, real_statx(dirfd, path, flags, mask, st), st->stx_size, st->stx_mode)

/* access() is a metadata lookup of the same cost: counted as a stat (documented). */
EXPORT int access(const char *path, int amode) {
    RESOLVE(access);
    if (!tracing()) return real_access(path, amode);
    TIMED(real_access(path, amode));
    on_path_stat(AT_FDCWD, path, ret, 0, 0, t1, t2);
    errno = e;
    return ret;
}
EXPORT int faccessat(int dirfd, const char *path, int amode, int flags) {
    RESOLVE(faccessat);
    if (!tracing()) return real_faccessat(dirfd, path, amode, flags);
    TIMED(real_faccessat(dirfd, path, amode, flags));
    on_path_stat(dirfd, path, ret, 0, 0, t1, t2);
    errno = e;
    return ret;
}

/* ---- STDIO: streams are keyed by their file descriptor; the standard streams are named ---- */
static inline int stream_fd(FILE *fp) { return fp ? fileno_unlocked(fp) : -1; }

/* The STDIO record of FP, registering stdin/stdout/stderr on first use; NULL if not traced. */
static record *stream_record(FILE *fp, int fd) {
    record *r = fd_record(g_fd_stdio, fd);
    if (r || fd < 0 || fd > 2 || (fp != stdin && fp != stdout && fp != stderr)) return r;
    static const char *const names[3] = {"<STDIN>", "<STDOUT>", "<STDERR>"};
    int i = record_index(names[fd], MOD_STDIO);
    g_fd_stdio[fd] = i + 1;
    return i >= 0 ? g_records[i] : NULL;
}

static inline int stdio_traced(FILE *fp) {
    int fd = stream_fd(fp);
    return fd >= 0 && fd < MAX_FDS && (g_fd_stdio[fd] || fd <= 2);
}

static void on_stdio_io(FILE *fp, int is_write, int64_t bytes, const void *buf, double t1, double t2) {
    int fd = stream_fd(fp);
    if (bytes < 0 || fd < 0 || fd >= MAX_FDS) return;
    pthread_mutex_lock(&g_lock);
    record *r = stream_record(fp, fd);
    if (r) {
        int64_t off = g_stdio_offset[fd];
        g_stdio_offset[fd] = off + bytes;
        count_io(r, is_write, bytes, off, ((uintptr_t)buf % MEM_ALIGNMENT) == 0, t1, t2);
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_stdio_event(FILE *fp, int counter, double t1, double t2) {
    int fd = stream_fd(fp);
    if (fd < 0 || fd >= MAX_FDS) return;
    long pos = counter == C_SEEKS ? real_ftell(fp) : -1;
    pthread_mutex_lock(&g_lock);
    record *r = stream_record(fp, fd);
    if (r) {
        r->c[counter]++;
        if (pos >= 0) g_stdio_offset[fd] = pos;
        if (counter == C_FLUSHES) r->f[F_WRITE_TIME] += t2 - t1;
        else meta_time(r, t1, t2);
    }
    pthread_mutex_unlock(&g_lock);
}

static int stdio_open_flags(const char *mode) {
    return mode && strchr(mode, 'a') ? O_APPEND : 0;
}

#define FOPEN_WRAPPER(name, call)                                                       \
    {                                                                                   \
        RESOLVE(name);                                                                  \
        if (!tracing()) return call;                                                    \
        TIMED(call);                                                                    \
        on_open(AT_FDCWD, path, stdio_open_flags(mode), ret ? stream_fd(ret) : -1, MOD_STDIO, \
                g_stdio_offset, g_fd_stdio, t1, t2);                                    \
        errno = e;                                                                      \
        return ret;                                                                     \
    }
EXPORT FILE *fopen(const char *path, const char *mode) FOPEN_WRAPPER(fopen, real_fopen(path, mode))
EXPORT FILE *fopen64(const char *path, const char *mode) FOPEN_WRAPPER(fopen64, real_fopen64(path, mode))

static void before_fclose(FILE *fp) {
    int fd = stream_fd(fp);
    if (fd < 0 || fd >= MAX_FDS) return;
    double t = now();
    on_close(g_fd_stdio, fd, t, t);
    pthread_mutex_lock(&g_lock);
    g_fd_posix[fd] = 0;  /* fclose closes the descriptor too (an fdopen'ed one included) */
    pthread_mutex_unlock(&g_lock);
}

EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp) {
    RESOLVE(freopen);
    if (!tracing()) return real_freopen(path, mode, fp);
    before_fclose(fp);
    FOPEN_WRAPPER(freopen, real_freopen(path, mode, fp))
}
EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp) {
    RESOLVE(freopen64);
    if (!tracing()) return real_freopen64(path, mode, fp);
    before_fclose(fp);
    FOPEN_WRAPPER(freopen64, real_freopen64(path, mode, fp))
}

EXPORT FILE *fdopen(int fd, const char *mode) {
    RESOLVE(fdopen);
    FILE *ret = real_fdopen(fd, mode);
    if (ret && tracing()) {
        int e = errno;
        pthread_mutex_lock(&g_lock);
        record *posix = fd_record(g_fd_posix, fd);
        int i = posix ? record_index(posix->path, MOD_STDIO) : -1;
        if (i >= 0) {
            g_fd_stdio[fd] = i + 1;
            g_stdio_offset[fd] = g_fd_offset[fd];
            g_records[i]->c[C_FDOPENS]++;
        }
        pthread_mutex_unlock(&g_lock);
        errno = e;
    }
    return ret;
}

EXPORT int fclose(FILE *fp) {
    RESOLVE(fclose);
    if (!tracing() || !stdio_traced(fp)) return real_fclose(fp);
    int fd = stream_fd(fp);
    TIMED(real_fclose(fp));
    on_close(g_fd_stdio, fd, t1, t2);
    pthread_mutex_lock(&g_lock);
    if (fd >= 0 && fd < MAX_FDS) g_fd_posix[fd] = 0;
    pthread_mutex_unlock(&g_lock);
    errno = e;
    return ret;
}

#define STDIO_IO_WRAPPER(name, is_write, buf, bytes_expr, call)                         \
    {                                                                                   \
        RESOLVE(name);                                                                  \
        if (!tracing() || !stdio_traced(fp)) return call;                               \
        TIMED(call);                                                                    \
        on_stdio_io(fp, is_write, bytes_expr, buf, t1, t2);                             \
        errno = e;                                                                      \
        return ret;                                                                     \
    }
EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *fp) STDIO_IO_WRAPPER(fread, 0, buf, (int64_t)(ret * size), real_fread(buf, size, n, fp))
EXPORT size_t __fread_chk(void *buf, size_t bl, size_t size, size_t n, FILE *fp) STDIO_IO_WRAPPER(__fread_chk, 0, buf, (int64_t)(ret * size), real___fread_chk(buf, bl, size, n, fp))
EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *fp) STDIO_IO_WRAPPER(fwrite, 1, buf, (int64_t)(ret * size), real_fwrite(buf, size, n, fp))
EXPORT int fputs(const char *s, FILE *fp) STDIO_IO_WRAPPER(fputs, 1, s, ret >= 0 ? (int64_t)strlen(s) : -1, real_fputs(s, fp))
EXPORT int fputc(int c, FILE *fp) STDIO_IO_WRAPPER(fputc, 1, NULL, ret != EOF ? 1 : -1, real_fputc(c, fp))
EXPORT char *fgets(char *s, int n, FILE *fp) STDIO_IO_WRAPPER(fgets, 0, s, ret ? (int64_t)strlen(ret) : -1, real_fgets(s, n, fp))
EXPORT int fgetc(FILE *fp) STDIO_IO_WRAPPER(fgetc, 0, NULL, ret != EOF ? 1 : -1, real_fgetc(fp))
EXPORT int vfprintf(FILE *fp, const char *fmt, va_list ap) STDIO_IO_WRAPPER(vfprintf, 1, NULL, ret, real_vfprintf(fp, fmt, ap))
EXPORT int putc(int c, FILE *fp) STDIO_IO_WRAPPER(putc, 1, NULL, ret != EOF ? 1 : -1, real_putc(c, fp))
EXPORT int getc(FILE *fp) STDIO_IO_WRAPPER(getc, 0, NULL, ret != EOF ? 1 : -1, real_getc(fp))
EXPORT int vprintf(const char *fmt, va_list ap) {
    FILE *fp = stdout;
    STDIO_IO_WRAPPER(vprintf, 1, NULL, ret, real_vprintf(fmt, ap))
}
EXPORT int puts(const char *s) {
    FILE *fp = stdout;
    STDIO_IO_WRAPPER(puts, 1, s, ret >= 0 ? (int64_t)strlen(s) + 1 : -1, real_puts(s))
}
EXPORT int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = vprintf(fmt, ap);
    va_end(ap);
    return ret;
}
EXPORT int fprintf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = vfprintf(fp, fmt, ap);
    va_end(ap);
    return ret;
}

#define STDIO_EVENT_WRAPPER(name, counter, ok, call)                                    \
    {                                                                                   \
        RESOLVE(name);                                                                  \
        if (!tracing() || !stdio_traced(fp)) return call;                               \
        TIMED(call);                                                                    \
        if (ok) on_stdio_event(fp, counter, t1, t2);                                    \
        errno = e;                                                                      \
        return ret;                                                                     \
    }
EXPORT int fseek(FILE *fp, long o, int whence) STDIO_EVENT_WRAPPER(fseek, C_SEEKS, ret == 0, real_fseek(fp, o, whence))
EXPORT int fseeko(FILE *fp, off_t o, int whence) STDIO_EVENT_WRAPPER(fseeko, C_SEEKS, ret == 0, real_fseeko(fp, o, whence))
EXPORT int fseeko64(FILE *fp, off_t o, int whence) STDIO_EVENT_WRAPPER(fseeko64, C_SEEKS, ret == 0, real_fseeko64(fp, o, whence))
EXPORT int fflush(FILE *fp) {
    RESOLVE(fflush);
    if (!fp) return real_fflush(fp);
    STDIO_EVENT_WRAPPER(fflush, C_FLUSHES, ret == 0, real_fflush(fp))
}
EXPORT void rewind(FILE *fp) {
    RESOLVE(rewind);
    if (!tracing() || !stdio_traced(fp)) { real_rewind(fp); return; }
    double t1 = now();
    real_rewind(fp);
    double t2 = now();
    int e = errno;
    on_stdio_event(fp, C_SEEKS, t1, t2);
    errno = e;
}

/* ---- leaving: exec and _exit skip the destructor, so the log is written first ---- */
static void before_exec(void) {
    /* A vfork child shares the parent's memory: its pid differs from g_pid, so nothing is written.
     * A fork child that did no I/O before exec (the usual spawn) leaves no log of its own. */
    if (g_state != 2 || tl_busy || getpid() != g_pid) return;
    pthread_mutex_lock(&g_lock);
    int active = g_failed_opens || g_failed_stats;
    for (int i = 0; i < g_nrecords && !active; i++) active = record_active(g_records[i]);
    if (active) write_log("exec");
    pthread_mutex_unlock(&g_lock);
}
EXPORT int execve(const char *p, char *const a[], char *const env[]) { RESOLVE(execve); before_exec(); return real_execve(p, a, env); }
EXPORT int execv(const char *p, char *const a[]) { RESOLVE(execv); before_exec(); return real_execv(p, a); }
EXPORT int execvp(const char *p, char *const a[]) { RESOLVE(execvp); before_exec(); return real_execvp(p, a); }
EXPORT int execvpe(const char *p, char *const a[], char *const env[]) { RESOLVE(execvpe); before_exec(); return real_execvpe(p, a, env); }
EXPORT int fexecve(int fd, char *const a[], char *const env[]) { RESOLVE(fexecve); before_exec(); return real_fexecve(fd, a, env); }

EXPORT void _exit(int status) {
    RESOLVE(_exit);
    if (g_state == 2 && getpid() == g_pid) write_log_locked("_exit");
    real__exit(status);
    __builtin_unreachable();
}
EXPORT void _Exit(int status) {
    RESOLVE(_Exit);
    if (g_state == 2 && getpid() == g_pid) write_log_locked("_exit");
    real__Exit(status);
    __builtin_unreachable();
}
