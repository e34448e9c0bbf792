/* gem-eval-trace: runs the tests of a terminal task under ptrace and reports, before the
   process that asked for it goes on, every file its processes execute or open for
   reading that was written in the agent's time (its ctime after SINCE and before the
   trace began). See gem_eval/envs/terminal/tracer.py, which builds, runs and reads it.

   usage: gem-eval-trace SINCE LIMIT WORKDIR TESTS [-q QUIET]... [-p SITE]... -- ARGV...

   Stdout carries only the trace (the traced processes get this program's stderr as
   their stdout and stderr): "T <start>" first, then one line per finding,
     R <kind> <flags> <ctime> <path> <extra>
   (tab-separated; tab, newline, backslash and other bytes below 0x20 or above 0x7e
   escaped as \xNN), "O" once LIMIT findings were written (the rest are not), "F <what>"
   for what could not be traced, and "E <status>" when the command ended.
   kind: x executed, i a script's interpreter, e the executable the kernel ran, l its
   ELF interpreter, s a symbolic link on the way (extra: its target), o opened for
   reading, p a new or changed file under a site directory's top-level entry (path: that
   entry; extra: the file).
   flags: b the process had read the tests or the work directory since its exec (its own
   work had begun); a it descends from one that had; n it runs a program the agent wrote
   or has loaded code of the agent's;
   S/P opened by a shell/a Python; X opened with O_CLOEXEC (as libc and the loader open
   their files; a shell opens a script it runs or sources without); E/H the file starts
   as an ELF/a script ("#!"); C/D (site entries) a file Python or the loader would run /
   another.

   Every finding is written before the traced process resumes, and this program is not
   dumpable (no process in the container can trace it or reach its descriptors), so code
   the agent planted cannot take back the line that names it. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/fsuid.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXPATH 4096
#define MAXPID (1 << 22)
#define MAXLIST 32

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_O_EXITKILL
#define PTRACE_O_EXITKILL (1 << 20)
#endif

/* struct ptrace_syscall_info (linux/ptrace.h, which clashes with sys/ptrace.h) */
struct call {
    uint8_t op;
    uint8_t pad[3];
    uint32_t arch;
    uint64_t ip, sp;
    union {
        struct { uint64_t nr, args[6]; } entry;
        struct { int64_t rval; uint8_t is_error; } exit;
        struct { uint64_t nr, args[6]; uint32_t ret_data; } seccomp;
    };
};
enum { OP_ENTRY = 1, OP_EXIT = 2, OP_SECCOMP = 3 };

#if defined(__x86_64__)
#define NATIVE AUDIT_ARCH_X86_64
#define COMPAT AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define NATIVE AUDIT_ARCH_AARCH64
#define COMPAT 0
#else
#error "gem-eval-trace: x86_64 or aarch64 only"
#endif

enum { C_NONE, C_OPEN, C_OPENAT, C_OPENAT2, C_EXECVE, C_EXECVEAT };

/* What a system call is, by architecture and number. */
static int classify(uint32_t arch, uint64_t nr) {
    if (arch == NATIVE) {
#ifdef __x86_64__
        if (nr & 0x40000000) return -1; /* x32 */
#endif
#ifdef __NR_open
        if (nr == __NR_open) return C_OPEN;
#endif
        if (nr == __NR_openat) return C_OPENAT;
#ifdef __NR_openat2
        if (nr == __NR_openat2) return C_OPENAT2;
#else
        if (nr == 437) return C_OPENAT2;
#endif
        if (nr == __NR_execve) return C_EXECVE;
#ifdef __NR_execveat
        if (nr == __NR_execveat) return C_EXECVEAT;
#endif
        return C_NONE;
    }
    if (COMPAT && arch == COMPAT) { /* i386 */
        switch (nr) {
        case 5: return C_OPEN;
        case 295: return C_OPENAT;
        case 437: return C_OPENAT2;
        case 11: return C_EXECVE;
        case 358: return C_EXECVEAT;
        default: return C_NONE;
        }
    }
    return -1;
}

struct task {            /* per thread */
    int known;           /* seen: its group is set */
    int stopped_once;    /* its first (attach) stop was taken */
    int pending;         /* C_* of the call in progress (0: none) */
    int acc;             /* the open's access mode */
    int cloexec;         /* the open asked for O_CLOEXEC (libc's and the loader's do) */
    int caller;          /* the group's flags when it called execve */
    char *path;          /* the call's path, absolute */
    int inject;          /* 1: a prctl was put in its call's place; 2: the call re-runs */
    void *saved;         /* its registers before (see make_dumpable) */
};
struct group {           /* per process */
    int begun, asked, newprog;
};
static struct task tasks[MAXPID];
static struct group groups[MAXPID];
static pid_t tgid_of[MAXPID];

static struct timespec since, start;
static long limit, written;
static const char *workdir, *testsdir;
static const char *quiet[MAXLIST], *sites[MAXLIST];
static int nquiet, nsites;
static int out = 1;

/* ---- output ------------------------------------------------------------------- */

static void put(const char *data, size_t n) {
    while (n > 0) {
        ssize_t w = write(out, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(125); /* the host is gone: stop everything (EXITKILL) */
        data += w;
        n -= (size_t)w;
    }
}

static size_t escape(char *dst, size_t room, const char *src) {
    size_t n = 0;
    for (; *src && n + 5 < room; src++) {
        unsigned char c = (unsigned char)*src;
        if (c < 0x20 || c > 0x7e || c == '\\') n += (size_t)snprintf(dst + n, room - n, "\\x%02x", c);
        else dst[n++] = (char)c;
    }
    dst[n] = 0;
    return n;
}

/* A small set of what was written already (kind, flags, file). */
#define SEEN (1 << 16)
static uint64_t seen[SEEN];
static int once(uint64_t key) {
    key |= 1;
    for (uint64_t i = key % SEEN, n = 0; n < SEEN; i = (i + 1) % SEEN, n++) {
        if (seen[i] == key) return 0;
        if (seen[i] == 0) { seen[i] = key; return 1; }
    }
    return 1;
}
static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ULL; }
static uint64_t hash_text(uint64_t h, const char *s) {
    for (; *s; s++) h = mix(h, (unsigned char)*s);
    return h;
}

static void record(char kind, const char *flags, const struct stat *st, const char *path,
                   const char *extra) {
    static char line[3 * MAXPATH * 4 + 128];
    static char a[MAXPATH * 4 + 8], b[MAXPATH * 4 + 8];
    uint64_t key = mix(mix(mix(0xcbf29ce484222325ULL, (uint64_t)kind), st->st_dev), st->st_ino);
    key = hash_text(key, flags);
    if (kind == 'p' || kind == 's') key = hash_text(key, path);
    if (!once(key)) return;
    if (written >= limit) {
        if (written++ == limit) put("O\n", 2);
        return;
    }
    written++;
    escape(a, sizeof a, path);
    escape(b, sizeof b, extra ? extra : "");
    int n = snprintf(line, sizeof line, "R\t%c\t%s\t%lld.%09ld\t%s\t%s\n", kind, flags,
                     (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, a, b);
    put(line, (size_t)n);
}

static void fail(const char *what, long pid) {
    char line[256];
    int n = snprintf(line, sizeof line, "F\t%s %ld\n", what, pid);
    put(line, (size_t)n);
}

/* ---- /proc/TID, as the tracee's own user when root may not look ------------------ */

/* A number of /proc/TID/status (name: "\nTgid:"), or -1. */
static long status_field(pid_t tid, const char *name) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strstr(buf, name);
    return p ? strtol(p + strlen(name), 0, 10) : -1;
}

/* Root without CAP_SYS_PTRACE (Docker grants none) may not read /proc/TID/{cwd,exe,fd}
   of a process that runs as another user (runuser, su); its user may, once the process
   is dumpable again (after its exec). */
static int owner(pid_t tid, uid_t *uid, gid_t *gid) {
    long u = status_field(tid, "\nUid:"), g = status_field(tid, "\nGid:");
    if (u < 0 || g < 0) return -1;
    *uid = (uid_t)u;
    *gid = (gid_t)g;
    return *uid == 0 ? -1 : 0;
}

enum { P_READLINK, P_STAT, P_OPEN };
static long proc_do(int op, const char *path, void *buf, size_t size) {
    switch (op) {
    case P_READLINK: return readlink(path, (char *)buf, size);
    case P_STAT: return stat(path, (struct stat *)buf);
    default: return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    }
}
static long proc_op(int op, pid_t tid, const char *rel, void *buf, size_t size) {
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/%s", tid, rel);
    long r = proc_do(op, path, buf, size);
    uid_t uid;
    gid_t gid;
    if (r >= 0 || (errno != EACCES && errno != EPERM) || owner(tid, &uid, &gid) != 0) return r;
    setfsgid(gid);
    setfsuid(uid);
    r = proc_do(op, path, buf, size);
    int saved = errno;
    setfsuid(0);
    setfsgid(0);
    errno = saved;
    return r;
}
static ssize_t proc_readlink(pid_t tid, const char *rel, char *buf, size_t size) {
    ssize_t n = (ssize_t)proc_op(P_READLINK, tid, rel, buf, size - 1);
    if (n > 0) buf[n] = 0;
    return n;
}

/* ---- files -------------------------------------------------------------------- */

static int under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

/* Written in the agent's time: after SINCE, before the trace began. */
static int agents(const struct stat *st) {
    const struct timespec *c = &st->st_ctim;
    int after = c->tv_sec > since.tv_sec || (c->tv_sec == since.tv_sec && c->tv_nsec > since.tv_nsec);
    int before = c->tv_sec < start.tv_sec || (c->tv_sec == start.tv_sec && c->tv_nsec < start.tv_nsec);
    return after && before;
}

enum { W_QUIET, W_WORK, W_SITE, W_OTHER };
static int where(const char *path, const char **site) {
    if (under(path, "/proc") || under(path, "/sys") || under(path, testsdir)) return W_QUIET;
    for (int i = 0; i < nquiet; i++)
        if (under(path, quiet[i])) return W_QUIET;
    if (workdir[0] && under(path, workdir)) return W_WORK;
    for (int i = 0; i < nsites; i++)
        if (under(path, sites[i])) {
            *site = sites[i];
            return W_SITE;
        }
    return W_OTHER;
}

/* In the work directory only what could take a module's name: a file at its top, or a
   package's __init__ one level down (the rest is the agent's work product). */
static int work_module(const char *path) {
    const char *rel = path + strlen(workdir);
    while (*rel == '/') rel++;
    const char *slash = strchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    if (slash && (strchr(name, '/') || strncmp(name, "__init__.", 9) != 0)) return 0;
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".py") || !strcmp(dot, ".pyc") || !strcmp(dot, ".so") ||
                   !strcmp(dot, ".pth"));
}

/* A name Python or the loader would run: a module, a start-up hook, a library. */
static int code_name(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *suffixes[] = {".py", ".pyc", ".pyo", ".pyd", ".pth", ".so", ".zip", ".egg", 0};
    size_t n = strlen(base);
    for (int i = 0; suffixes[i]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcmp(base + n - k, suffixes[i])) return 1;
    }
    return strstr(base, ".so.") != 0;
}

static void magic_fd(int fd, char *flags) {
    unsigned char head[4] = {0};
    if (fd < 0) return;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n >= 4 && !memcmp(head, ELFMAG, SELFMAG)) strcat(flags, "E");
    else if (n >= 2 && head[0] == '#' && head[1] == '!') strcat(flags, "H");
}
static void magic(const char *path, char *flags) {
    magic_fd(open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), flags);
}

static void opener(pid_t tid, char *flags) {
    char exe[MAXPATH];
    if (proc_readlink(tid, "exe", exe, sizeof exe) <= 0) return;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    static const char *shells[] = {"bash", "sh", "dash", "ash", "zsh", "ksh", "mksh", "busybox", 0};
    for (int i = 0; shells[i]; i++)
        if (!strcmp(base, shells[i])) { strcat(flags, "S"); return; }
    if (!strncmp(base, "python", 6) || !strncmp(base, "pypy", 4)) strcat(flags, "P");
}

static void group_flags(const struct group *g, char *flags) {
    flags[0] = 0;
    if (g->begun) strcat(flags, "b");
    if (g->asked) strcat(flags, "a");
    if (g->newprog) strcat(flags, "n");
}

/* Report a file (already stat-ed) where it lies. Returns 1 when it was the agent's, 3
   when it was the agent's code opened (the process then runs the agent's code: what it
   loads next may be that code's own). */
static int report(char kind, const char *base_flags, const struct stat *st, const char *path,
                  const char *extra, pid_t tid) {
    if (!agents(st)) return 0;
    const char *site = 0;
    int w = where(path, &site);
    if (w == W_QUIET) return 0;
    if (w == W_WORK && (kind != 'o' || !work_module(path))) {
        char head[8] = "";
        if (kind == 'o') magic(path, head);
        return kind == 'o' && (head[0] || code_name(path)) ? 3 : 1;
    }
    char flags[32];
    snprintf(flags, sizeof flags, "%s", base_flags);
    if (w == W_SITE) {
        char top[MAXPATH];
        const char *rel = path + strlen(site);
        while (*rel == '/') rel++;
        const char *slash = strchr(rel, '/');
        size_t n = slash ? (size_t)(slash - path) : strlen(path);
        if (n >= sizeof top) n = sizeof top - 1;
        memcpy(top, path, n);
        top[n] = 0;
        struct stat key = *st;
        key.st_dev = key.st_ino = 0; /* one line per entry and flags */
        char head[8] = "";
        magic(path, head);
        int code = code_name(path) || head[0] == 'E';
        strcat(flags, code ? "C" : "D");
        record('p', flags, &key, top, path);
        return code ? 3 : 1;
    }
    if (kind == 'o') {
        int fd = extra ? (int)proc_op(P_OPEN, tid, extra, 0, 0) : -1;
        if (fd >= 0) magic_fd(fd, flags);
        else magic(path, flags);
        opener(tid, flags);
        extra = 0;
        record(kind, flags, st, path, extra);
        return strpbrk(flags, "EH") || code_name(path) ? 3 : 1;
    }
    if (kind != 's') magic(path, flags);
    record(kind, flags, st, path, extra);
    return 1;
}

/* Resolve an absolute PATH as the kernel would, reporting each symbolic link on the way
   that the agent wrote; OUT gets the path reached (which may not exist). */
static void walk(const char *path, char *outp, const char *flags, pid_t tid) {
    char rest[2 * MAXPATH], done[MAXPATH], next[2 * MAXPATH], target[MAXPATH];
    snprintf(rest, sizeof rest, "%s", path);
    done[0] = 0;
    for (int links = 0; rest[0];) {
        char *p = rest;
        while (*p == '/') p++;
        char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char comp[MAXPATH];
        if (n >= sizeof comp) break;
        memcpy(comp, p, n);
        comp[n] = 0;
        memmove(rest, p + n, strlen(p + n) + 1);
        if (!n || !strcmp(comp, ".")) continue;
        if (!strcmp(comp, "..")) {
            char *slash = strrchr(done, '/');
            if (slash) *slash = 0;
            continue;
        }
        char cand[2 * MAXPATH];
        snprintf(cand, sizeof cand, "%s/%s", done, comp);
        struct stat st;
        if (lstat(cand, &st) != 0 || !S_ISLNK(st.st_mode) || links++ > 40) {
            snprintf(done, sizeof done, "%s", cand);
            continue;
        }
        ssize_t t = readlink(cand, target, sizeof target - 1);
        if (t <= 0) { snprintf(done, sizeof done, "%s", cand); continue; }
        target[t] = 0;
        report('s', flags, &st, cand, target, tid);
        if (target[0] == '/') done[0] = 0;
        snprintf(next, sizeof next, "%s/%s", target, rest);
        snprintf(rest, sizeof rest, "%s", next);
    }
    snprintf(outp, MAXPATH, "%s", done[0] ? done : "/");
}

/* ---- the tracee's memory and paths ---------------------------------------------- */

/* Read the tracee's memory: process_vm_readv, else /proc/PID/mem (Docker's default
   seccomp profile refuses the first without CAP_SYS_PTRACE). */
static int vm_read(pid_t tid, uint64_t addr, void *buf, size_t n) {
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};
    static int vm_ok = 1;
    if (vm_ok) {
        ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
        if (got > 0) return (int)got;
        if (errno == ENOSYS || errno == EPERM) vm_ok = 0;
        else return -1;
    }
    char mem[64];
    snprintf(mem, sizeof mem, "/proc/%d/mem", tid);
    int fd = open(mem, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = pread(fd, buf, n, (off_t)addr);
        close(fd);
        if (got > 0) return (int)got;
    }
    /* Another user's process: the tracer may still peek (ptrace asks no credentials). */
    size_t done = 0;
    while (done < n) {
        uint64_t base = (addr + done) & ~(uint64_t)7, skip = (addr + done) - base;
        errno = 0;
        long word = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)base, 0);
        if (errno) break;
        size_t take = 8 - skip < n - done ? 8 - skip : n - done;
        memcpy((char *)buf + done, (char *)&word + skip, take);
        done += take;
    }
    return done > 0 ? (int)done : -1;
}

static int read_string(pid_t tid, uint64_t addr, char *buf, size_t size) {
    size_t got = 0;
    while (got + 1 < size) {
        size_t page = 4096 - ((addr + got) & 4095);
        size_t want = page < size - 1 - got ? page : size - 1 - got;
        int n = vm_read(tid, addr + got, buf + got, want);
        if (n <= 0) return -1;
        if (memchr(buf + got, 0, (size_t)n)) return 0;
        got += (size_t)n;
    }
    buf[size - 1] = 0;
    return 0;
}

/* The absolute form of PATH as DIRFD (AT_FDCWD: the working directory) sees it. */
static int absolute(pid_t tid, long dirfd, const char *path, char *outp) {
    if (path[0] == '/') {
        snprintf(outp, MAXPATH, "%s", path);
        return 0;
    }
    char rel[64], base[MAXPATH];
    if (dirfd == AT_FDCWD) snprintf(rel, sizeof rel, "cwd");
    else snprintf(rel, sizeof rel, "fd/%ld", dirfd);
    if (proc_readlink(tid, rel, base, sizeof base) <= 0) return -1;
    if (path[0]) snprintf(outp, MAXPATH, "%s/%s", base, path);
    else snprintf(outp, MAXPATH, "%s", base);
    return 0;
}

/* ---- what a call did ---------------------------------------------------------- */

static void on_open(pid_t tid, long fd) {
    struct task *t = &tasks[tid];
    struct group *g = &groups[tgid_of[tid]];
    char flags[32], fdpath[64], resolved[MAXPATH], reached[MAXPATH];
    if (t->acc == O_WRONLY) { /* written, not read: it only says the process is at work */
        if (under(t->path, testsdir) || (workdir[0] && under(t->path, workdir))) g->begun = 1;
        return;
    }
    group_flags(g, flags);
    if (t->cloexec) strcat(flags, "X");
    walk(t->path, reached, flags, tid);
    snprintf(fdpath, sizeof fdpath, "fd/%ld", fd);
    struct stat st;
    if (proc_op(P_STAT, tid, fdpath, &st, 0) == 0) {
        if (!S_ISREG(st.st_mode) || proc_readlink(tid, fdpath, resolved, sizeof resolved) <= 0)
            return;
    } else if (stat(reached, &st) == 0) { /* not ours to look at (yet): by its path */
        if (!S_ISREG(st.st_mode)) return;
        snprintf(resolved, sizeof resolved, "%s", reached);
        fdpath[0] = 0;
    } else {
        fail("unreadable-open", tid);
        return;
    }
    if (report('o', flags, &st, resolved, fdpath[0] ? fdpath : 0, tid) == 3) g->newprog = 1;
    if (under(resolved, testsdir) || (workdir[0] && under(resolved, workdir))) g->begun = 1;
}

/* A file the kernel runs: its links, itself, and (a script) its interpreters. */
static int run_file(const char *path, char kind, const char *flags, pid_t tid, int depth,
                    char *last) {
    char reached[MAXPATH];
    walk(path, reached, flags, tid);
    if (last) snprintf(last, MAXPATH, "%s", reached);
    struct stat st;
    if (stat(reached, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    int wrote = report(kind, flags, &st, reached, 0, tid);
    if (depth >= 5) return wrote;
    char head[256];
    int fd = open(reached, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return wrote;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n < 3 || head[0] != '#' || head[1] != '!') return wrote;
    head[n] = 0;
    char *p = head + 2;
    while (*p == ' ' || *p == '\t') p++;
    char *e = p;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
    *e = 0;
    if (*p == '/') wrote |= run_file(p, 'i', flags, tid, depth + 1, last);
    return wrote;
}

/* The ELF interpreter an executable names (PT_INTERP), into OUT ("" if none). */
static void elf_interp(int fd, char *outp) {
    outp[0] = 0;
    if (fd < 0) return;
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
        close(fd);
        return;
    }
    for (int i = 0; i < 512; i++) {
        uint64_t type, off, size;
        if (eh.e_ident[EI_CLASS] == ELFCLASS64) {
            Elf64_Phdr ph;
            if (i >= eh.e_phnum || pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != (ssize_t)sizeof ph) break;
            type = ph.p_type, off = ph.p_offset, size = ph.p_filesz;
        } else {
            Elf32_Ehdr *e32 = (Elf32_Ehdr *)&eh;
            Elf32_Phdr ph;
            if (i >= e32->e_phnum || pread(fd, &ph, sizeof ph, (off_t)(e32->e_phoff + (uint64_t)i * e32->e_phentsize)) != (ssize_t)sizeof ph) break;
            type = ph.p_type, off = ph.p_offset, size = ph.p_filesz;
        }
        if (type == PT_INTERP && size > 1 && size < MAXPATH) {
            ssize_t n = pread(fd, outp, size, (off_t)off);
            outp[n > 0 ? n - 1 : 0] = 0;
            break;
        }
    }
    close(fd);
}

static void forget(pid_t tid) {
    free(tasks[tid].path);
    free(tasks[tid].saved);
    memset(&tasks[tid], 0, sizeof tasks[tid]);
}

static void on_exec(pid_t pid, pid_t former) {
    struct task *t = &tasks[former];
    int caller = t->pending == C_EXECVE || t->pending == C_EXECVEAT ? t->caller : 0;
    struct group *g = &groups[pid];
    g->asked = (caller & 1) || (caller & 2);
    g->begun = 0;
    g->newprog = 0;
    char flags[32];
    snprintf(flags, sizeof flags, "%s%s", caller & 1 ? "b" : "", caller & 2 ? "a" : "");
    char reached[MAXPATH] = "";
    int wrote = t->path ? run_file(t->path, 'x', flags, pid, 0, reached) : 0;
    char exe[MAXPATH], interp[MAXPATH];
    struct stat st;
    if (proc_readlink(pid, "exe", exe, sizeof exe) > 0 && proc_op(P_STAT, pid, "exe", &st, 0) == 0) {
        wrote |= report('e', flags, &st, exe, 0, pid);
        int fd = (int)proc_op(P_OPEN, pid, "exe", 0, 0);
        elf_interp(fd, interp);
        if (interp[0] == '/') run_file(interp, 'l', flags, pid, 5, 0);
    } else if (reached[0]) { /* not ours to look at: what it was asked to run */
        elf_interp(open(reached, O_RDONLY | O_CLOEXEC), interp);
        if (interp[0] == '/') run_file(interp, 'l', flags, pid, 5, 0);
    }
    g->newprog = wrote;
    free(t->path);
    t->path = 0;
    t->pending = 0;
    if (former != pid) { /* a thread ran the exec: it takes the leader's place */
        forget(pid);
        tasks[pid] = *t;
        memset(t, 0, sizeof *t);
        tasks[pid].known = 1;
        tgid_of[pid] = pid;
    }
}

/* ---- bookkeeping -------------------------------------------------------------- */


static void meet(pid_t tid) {
    if (tasks[tid].known) return;
    tasks[tid].known = 1;
    pid_t tgid = (pid_t)status_field(tid, "\nTgid:");
    if (tgid <= 0 || tgid >= MAXPID) tgid = tid;
    tgid_of[tid] = tgid;
    if (tgid == tid) {
        pid_t parent = (pid_t)status_field(tid, "\nPPid:");
        if (parent > 0 && parent < MAXPID && tasks[parent].known) groups[tid] = groups[tgid_of[parent]];
        else memset(&groups[tid], 0, sizeof groups[tid]);
    }
}


/* A call's entry; returns 1 when the process must first be made readable. */
static int on_entry(pid_t tid, const struct call *c) {
    struct task *t = &tasks[tid];
    int kind = classify(c->arch, c->seccomp.nr);
    const uint64_t *a = c->seccomp.args;
    free(t->path);
    t->path = 0;
    t->pending = 0;
    if (kind < 0) {
        if (once(mix(0x5a5aULL, (uint64_t)tgid_of[tid]))) fail("untraceable-abi", tid);
        return 0;
    }
    if (kind == C_NONE) return 0;
    long dirfd = AT_FDCWD;
    uint64_t addr;
    int flags = 0;
    switch (kind) {
    case C_OPEN: addr = a[0]; flags = (int)a[1]; break;
    case C_OPENAT: dirfd = (long)(int)a[0]; addr = a[1]; flags = (int)a[2]; break;
    case C_OPENAT2: {
        dirfd = (long)(int)a[0];
        addr = a[1];
        uint64_t how = 0;
        if (vm_read(tid, a[2], &how, sizeof how) == (int)sizeof how) flags = (int)how;
        break;
    }
    case C_EXECVE: addr = a[0]; break;
    default: dirfd = (long)(int)a[0]; addr = a[1]; break; /* execveat */
    }
    char path[MAXPATH], abs_path[MAXPATH];
    if (read_string(tid, addr, path, sizeof path) != 0 || absolute(tid, dirfd, path, abs_path) != 0) {
        if (t->inject == 0 && c->arch == NATIVE) return 1;
        t->inject = 0;
        if (kind >= C_EXECVE) fail("unreadable-exec", tid);
        else if ((flags & O_ACCMODE) != O_WRONLY) fail("unreadable-open", tid);
        return 0;
    }
    t->inject = 0;
    t->pending = kind;
    t->acc = flags & O_ACCMODE;
    t->cloexec = (flags & O_CLOEXEC) != 0;
    t->path = strdup(abs_path);
    if (kind >= C_EXECVE) {
        struct group *g = &groups[tgid_of[tid]];
        t->caller = (g->begun ? 1 : 0) | (g->asked ? 2 : 0);
    }
    return 0;
}

static void on_exit_call(pid_t tid, const struct call *c) {
    struct task *t = &tasks[tid];
    if ((t->pending == C_OPEN || t->pending == C_OPENAT || t->pending == C_OPENAT2) &&
        !c->exit.is_error && c->exit.rval >= 0)
        on_open(tid, (long)c->exit.rval);
    free(t->path);
    t->path = 0;
    t->pending = 0;
}

/* ---- main --------------------------------------------------------------------- */

/* ---- a process that gave up root ------------------------------------------------ */

/* A process that changed its user (runuser, su) is not dumpable until its next exec, and
   then not even its tracer may read its memory without CAP_SYS_PTRACE. Its call is
   replaced by prctl(PR_SET_DUMPABLE, 1), then run again (its registers restored, its
   instruction pointer put back on the system call instruction), and read then. */
#if defined(__x86_64__)
typedef struct user_regs_struct regs_t;
#define SYSCALL_BYTES 2
#else
typedef struct user_regs_struct regs_t; /* aarch64: regs[31], sp, pc, pstate */
#define SYSCALL_BYTES 4
#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif
#endif

static int regs_io(pid_t tid, int set, regs_t *r) {
    struct iovec v = {r, sizeof *r};
    return ptrace(set ? PTRACE_SETREGSET : PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &v) == 0 ? 0 : -1;
}

static int make_dumpable(pid_t tid) {
    regs_t r;
    if (regs_io(tid, 0, &r) != 0) return -1;
    if (!tasks[tid].saved && !(tasks[tid].saved = malloc(sizeof r))) return -1;
    memcpy(tasks[tid].saved, &r, sizeof r);
#if defined(__x86_64__)
    r.orig_rax = __NR_prctl;
    r.rdi = PR_SET_DUMPABLE;
    r.rsi = 1;
    if (regs_io(tid, 1, &r) != 0) return -1;
#else
    r.regs[0] = PR_SET_DUMPABLE;
    r.regs[1] = 1;
    int nr = __NR_prctl;
    struct iovec v = {&nr, sizeof nr};
    if (regs_io(tid, 1, &r) != 0 || ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &v) != 0)
        return -1;
#endif
    tasks[tid].inject = 1;
    return 0;
}

/* At the prctl's exit: the call as it was, to run again. */
static void run_again(pid_t tid) {
    regs_t r;
    memcpy(&r, tasks[tid].saved, sizeof r);
#if defined(__x86_64__)
    r.rip -= SYSCALL_BYTES;
    r.rax = r.orig_rax;
#else
    r.pc -= SYSCALL_BYTES;
#endif
    if (regs_io(tid, 1, &r) != 0) fail("rerun", tid);
    tasks[tid].inject = 2;
}

static int install_filter(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 7, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 6, 0),
#else
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 7, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 6, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 437 /* openat2 */, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 2, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static void parse_time(const char *text, struct timespec *ts) {
    char *dot;
    ts->tv_sec = strtoll(text, &dot, 10);
    ts->tv_nsec = 0;
    if (*dot == '.') {
        long scale = 100000000;
        for (char *p = dot + 1; *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
            ts->tv_nsec += (*p - '0') * scale;
    }
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: gem-eval-trace SINCE LIMIT WORKDIR TESTS [-q DIR]... [-p DIR]... -- ARGV...\n");
        return 126;
    }
    parse_time(argv[1], &since);
    limit = atol(argv[2]);
    workdir = argv[3];
    testsdir = argv[4];
    int i = 5;
    for (; i < argc && strcmp(argv[i], "--"); i += 2) {
        if (i + 1 >= argc || nquiet >= MAXLIST || nsites >= MAXLIST) return 126;
        if (!strcmp(argv[i], "-q")) quiet[nquiet++] = argv[i + 1];
        else if (!strcmp(argv[i], "-p")) sites[nsites++] = argv[i + 1];
        else return 126;
    }
    if (i + 1 >= argc) return 126;
    char **command = argv + i + 1;
    clock_gettime(CLOCK_REALTIME_COARSE, &start); /* what ctime is set from */
    char line[64];
    put(line, (size_t)snprintf(line, sizeof line, "T %lld.%09ld\n", (long long)start.tv_sec, start.tv_nsec));

    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) return 126;
    pid_t root = fork();
    if (root < 0) return 126;
    if (root == 0) {
        dup2(2, 1); /* never the trace's stream */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char traced = ptrace(PTRACE_TRACEME, 0, 0, 0) == 0;
        if (write(ready[1], &traced, 1) != 1) _exit(126);
        if (traced) raise(SIGSTOP); /* the tracer sets its options */
        char filtered = traced && install_filter() == 0;
        if (write(ready[1], &filtered, 1) != 1) _exit(126);
        execvp(command[0], command);
        _exit(127);
    }
    close(ready[1]);
    prctl(PR_SET_DUMPABLE, 0);
    int status;
    char traced = 0, filtered = 0;
    if (read(ready[0], &traced, 1) != 1) traced = 0;
    if (traced) {
        if (waitpid(root, &status, __WALL) != root || !WIFSTOPPED(status)) return 126;
        long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK |
                    PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
                    PTRACE_O_TRACESYSGOOD;
        if (ptrace(PTRACE_SETOPTIONS, root, 0, opts) != 0) {
            put("F\tptrace-options 0\n", 20);
            kill(root, SIGKILL);
            return 126;
        }
        tasks[root].known = tasks[root].stopped_once = 1;
        tgid_of[root] = root;
        ptrace(PTRACE_CONT, root, 0, 0);
    }
    if (read(ready[0], &filtered, 1) != 1) filtered = 0;
    close(ready[0]);
    /* Refused (a seccomp profile without ptrace, say): the command runs all the same,
       and the host reads that nothing it loaded was seen. */
    if (!traced) put("F\tptrace 0\n", 10);
    else if (!filtered) put("F\tseccomp 0\n", 11);
    for (;;) {
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (tid >= MAXPID) {
            fail("pid-out-of-range", tid);
            kill(tid, SIGKILL);
            continue;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            forget(tid);
            if (tid == root) {
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                put(line, (size_t)snprintf(line, sizeof line, "E %d\n", code));
                return code; /* the rest die with this program (EXITKILL) */
            }
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        meet(tid);
        int sig = WSTOPSIG(status), event = status >> 16;
        long resume = PTRACE_CONT, deliver = 0;
        struct call c;
        if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
            if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof c, &c) > 0 && c.op == OP_SECCOMP) {
                if (on_entry(tid, &c)) {
                    if (make_dumpable(tid) == 0) resume = PTRACE_SYSCALL;
                    else fail("unreadable-call", tid);
                } else if (tasks[tid].pending) {
                    resume = PTRACE_SYSCALL;
                }
            } else {
                fail("syscall-info", tid);
            }
        } else if (sig == (SIGTRAP | 0x80)) {
            if (tasks[tid].inject == 1) run_again(tid);
            else if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof c, &c) > 0 && c.op == OP_EXIT)
                on_exit_call(tid, &c);
        } else if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) {
            unsigned long former = (unsigned long)tid;
            ptrace(PTRACE_GETEVENTMSG, tid, 0, &former);
            if (former >= MAXPID) former = (unsigned long)tid;
            on_exec(tid, (pid_t)former);
        } else if (sig == SIGTRAP && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
                                      event == PTRACE_EVENT_CLONE)) {
            unsigned long child = 0;
            ptrace(PTRACE_GETEVENTMSG, tid, 0, &child);
            if (child > 0 && child < MAXPID && !tasks[child].known) {
                tasks[child].known = 1;
                if (event == PTRACE_EVENT_CLONE && status_field((pid_t)child, "\nTgid:") == tgid_of[tid]) {
                    tgid_of[child] = tgid_of[tid];
                } else {
                    tgid_of[child] = (pid_t)child;
                    groups[child] = groups[tgid_of[tid]];
                }
            }
        } else if (sig == SIGSTOP && !tasks[tid].stopped_once) {
            tasks[tid].stopped_once = 1; /* a new tracee's attach stop */
        } else if (event == 0) {
            siginfo_t info;
            if (ptrace(PTRACE_GETSIGINFO, tid, 0, &info) == 0) deliver = sig;
            /* else a group-stop: let it run on (the tests are not a terminal's job) */
        }
        ptrace(resume, tid, 0, deliver);
    }
    put("E 126\n", 6);
    return 126;
}
