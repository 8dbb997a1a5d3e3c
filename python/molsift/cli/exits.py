"""The command line's exit codes and the --io-log help: what `main` needs before any verb is
imported (no argparse here, so that `molsift count` can start without it)."""

EXIT_NOT_FOUND = 1  # lookup: some queries are not in the store (as grep finding nothing)
EXIT_ERROR = 2  # bad arguments or input, a damaged store, a failed run: one line on stderr says why
EXIT_NOTHING_USABLE = 3  # ingest/screen ran, but no record was stored or scored
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_PIPE_CLOSED = 141  # as a shell reports a process killed by SIGPIPE
EXIT_CODES = (
    "exit status:\n"
    "  0    success\n"
    "  1    an unexpected error (a bug: the traceback is printed); for lookup, some queries\n"
    "       were not found (as grep)\n"
    f"  {EXIT_ERROR}    an error: bad arguments, unreadable input, a damaged store, a failed run,\n"
    "       memory that ran out (the line names the ulimit -v limit)\n"
    f"  {EXIT_NOTHING_USABLE}    nothing usable: ingest stored no molecule or screen scored no "
    "record (empty\n"
    "       input, or every record rejected); the store or results are still written, with the\n"
    "       rejects in rejects.tsv\n"
    f"  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)\n"
    f"  {EXIT_PIPE_CLOSED}  the output pipe was closed early "
    "(e.g. `molsift info STORE | head -3`)\n"
    "  profile exits with the status of the program it ran"
)

IO_LOG_HELP = (
    "write molsift's own I/O counters (every file, every process: workers and MPI "
    "ranks too) to this log at the end; read it with molsift insights"
)
