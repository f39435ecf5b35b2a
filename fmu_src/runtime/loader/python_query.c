/* The interpreter query's answer (python_env.c's QUERY) kept between processes.
 *
 * A C master starts Python itself: before Py_InitializeEx the loader runs `python -c QUERY` to
 * learn libpython, the prefixes and sys.path, a whole interpreter's start with its site
 * (60-90 ms of a start that takes 0.3-0.4 s; issue 30, start-up).  The answer depends on the
 * interpreter, a few environment variables, requirements.txt and what is installed where it
 * looks; so it is kept, in the engine's cache folder ($EMBED_CACHE, else
 * $XDG_CACHE_HOME/embed-fmu, else ~/.cache/embed-fmu; EMBED_CACHE=off: never), under a key of
 * the interpreter's path (as chosen, as found on PATH, resolved), those variables and
 * requirements.txt's text, with a stamp (modification time, size, inode, or absent) of every
 * file and folder the answer came from: the interpreter, libpython, each sys.path entry (a
 * package installed or removed changes its folder's time), the site folders not on it (a
 * user site created later) and pyvenv.cfg.  A stamp that differs, a key that differs, a file
 * that does not parse: the query runs again and the file is written anew (whole, then renamed
 * into place).  An answer that names a missing package is never kept. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"

static const char *ENV_KEYS[] = {"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
                                 "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONSTARTUP", "HOME",
                                 NULL};
#define MAX_FILE (1 << 20)

typedef struct { char *p; size_t len, cap; int bad; } Str;

static void put(Str *s, const char *text, size_t n)
{
    if (s->bad) return;
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *p = realloc(s->p, cap);
        if (!p) { s->bad = 1; return; }
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->len, text, n);
    s->len += n;
    s->p[s->len] = 0;
}

static void puts_(Str *s, const char *text) { put(s, text, strlen(text)); }

/* The interpreter as run (posix_spawnp): a path, else the first executable on PATH. */
static int found_on_path(const char *python, char *out, size_t n)
{
    if (strchr(python, '/')) return snprintf(out, n, "%s", python) < (int)n;
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (snprintf(out, n, "%.*s/%s", (int)len, len ? path : ".", python) < (int)n
            && access(out, X_OK) == 0) return 1;
        path = end ? end + 1 : NULL;
    }
    return 0;
}

static int read_all(const char *path, Str *s)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char buf[8192];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0 && s->len < MAX_FILE) put(s, buf, r);
    fclose(f);
    return !s->bad && s->len < MAX_FILE;
}

/* The key: what the answer was asked with.  0 if it cannot be formed (then no cache). */
static int make_key(const char *python, const char *requirements, Str *key)
{
    char exe[PATH_MAX], real[PATH_MAX];
    if (!found_on_path(python, exe, sizeof exe) || !realpath(exe, real)) return 0;
    puts_(key, "embed python query 1\npython=");
    puts_(key, python);
    puts_(key, "\nexe=");
    puts_(key, exe);
    puts_(key, "\nreal=");
    puts_(key, real);
    for (const char **k = ENV_KEYS; *k; k++) {
        const char *v = getenv(*k);
        puts_(key, "\n");
        puts_(key, *k);
        puts_(key, v ? "=" : " unset");
        if (v) puts_(key, v);
    }
    puts_(key, "\nrequirements:\n");
    Str req = {0};
    int ok = read_all(requirements, &req);
    if (ok && req.p) puts_(key, req.p);
    free(req.p);
    if (!ok) puts_(key, "(unreadable)");
    return !key->bad && !memchr(key->p, 0, key->len);
}

static void stamp(Str *s, const char *path, size_t n)
{
    char p[PATH_MAX], line[PATH_MAX + 96];
    if (n >= sizeof p) { s->bad = 1; return; }
    memcpy(p, path, n);
    p[n] = 0;
    struct stat st;
    if (stat(p, &st)) snprintf(line, sizeof line, "%s\t-\n", p);
    else snprintf(line, sizeof line, "%s\t%lld.%09ld %lld %llu\n", p, (long long)st.st_mtim.tv_sec,
                  st.st_mtim.tv_nsec, (long long)st.st_size, (unsigned long long)st.st_ino);
    puts_(s, line);
}

static void stamp_list(Str *s, const char *list)
{
    while (*list) {
        const char *end = strchr(list, ':');
        size_t len = end ? (size_t)(end - list) : strlen(list);
        if (len) stamp(s, list, len);
        if (!end) break;
        list = end + 1;
    }
}

/* The stamps of what answer ``lines`` came from (QUERY's: 0 libpython, 1 executable, 4 sys.path,
 * 6 the site folders and pyvenv.cfg). */
static void stamps(char lines[][QUERY_LINE], const char *exe_key, Str *s)
{
    const char *exe = strstr(exe_key, "\nexe=") + 5, *end = strchr(exe, '\n');
    stamp(s, exe, (size_t)(end - exe));
    stamp(s, lines[0], strlen(lines[0]));
    stamp(s, lines[1], strlen(lines[1]));
    stamp_list(s, lines[4]);
    stamp_list(s, lines[6]);
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ULL; }
    return h;
}

/* The cache file for ``key`` (its folder made if ``make``), or 0 if the cache is off. */
static int cache_file(const Str *key, char *out, size_t n, int make)
{
    char dir[PATH_MAX];
    const char *e = getenv("EMBED_CACHE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (e && *e) {
        static const char *OFF[] = {"off", "0", "no", "false", "none", NULL};
        for (const char **o = OFF; *o; o++) if (!strcasecmp(e, *o)) return 0;
        snprintf(dir, sizeof dir, "%s", e);
    } else if (x && *x) {
        snprintf(dir, sizeof dir, "%s/embed-fmu", x);
    } else if (h && *h) {
        snprintf(dir, sizeof dir, "%s/.cache", h);
        if (make) mkdir(dir, 0700);
        snprintf(dir, sizeof dir, "%s/.cache/embed-fmu", h);
    } else {
        return 0;
    }
    if (make) mkdir(dir, 0700);
    return snprintf(out, n, "%s/python-%016llx.query", dir,
                    (unsigned long long)fnv1a(key->p, key->len)) < (int)n;
}

int query_cached(const char *python, const char *requirements, char lines[][QUERY_LINE])
{
    Str key = {0}, data = {0}, now = {0};
    char path[PATH_MAX];
    int ok = 0;
    if (!make_key(python, requirements, &key) || !cache_file(&key, path, sizeof path, 0)
        || !read_all(path, &data) || !data.p)
        goto out;
    /* key NUL stamps NUL the QUERY_LINES lines, each ending in a newline */
    char *stamped = memchr(data.p, 0, data.len);
    if (!stamped || (size_t)(stamped - data.p) != key.len || memcmp(data.p, key.p, key.len))
        goto out;
    stamped++;
    char *answer = memchr(stamped, 0, data.len - (size_t)(stamped - data.p));
    if (!answer) goto out;
    answer++;
    char got[QUERY_LINES][QUERY_LINE];
    for (int i = 0; i < QUERY_LINES; i++) {
        char *e = strchr(answer, '\n');
        if (!e || (size_t)(e - answer) >= QUERY_LINE) goto out;
        memcpy(got[i], answer, (size_t)(e - answer));
        got[i][e - answer] = 0;
        answer = e + 1;
    }
    stamps(got, key.p, &now);
    if (now.bad || !now.p || strcmp(now.p, stamped)) goto out;
    memcpy(lines, got, sizeof got);
    ok = 1;
out:
    free(key.p);
    free(data.p);
    free(now.p);
    return ok;
}

void query_store(const char *python, const char *requirements, char lines[][QUERY_LINE])
{
    Str key = {0}, s = {0}, body = {0};
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    if (lines[5][0] || !make_key(python, requirements, &key)
        || !cache_file(&key, path, sizeof path, 1))
        goto out;
    stamps(lines, key.p, &s);
    put(&body, key.p, key.len + 1);              /* with its NUL */
    if (s.p) put(&body, s.p, s.len + 1);
    for (int i = 0; i < QUERY_LINES; i++) {
        puts_(&body, lines[i]);
        puts_(&body, "\n");
    }
    if (body.bad || s.bad || !s.p) goto out;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());   /* (cache_files) */
    FILE *f = fopen(tmp, "wb");
    if (!f) goto out;
    int written = fwrite(body.p, 1, body.len, f) == body.len;
    if (fclose(f) || !written || rename(tmp, path)) unlink(tmp);
out:
    free(key.p);
    free(s.p);
    free(body.p);
}
