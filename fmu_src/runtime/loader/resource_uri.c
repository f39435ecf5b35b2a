/* fmuResourceLocation decoded (FMI 2.0 section 2.1.5, fmi2Instantiate: "the URI of the
 * resources directory of the unzipped FMU", a URI of RFC 3986; "file" scheme: RFC 8089).
 *
 * Masters percent-encode every byte of the path that is not plain ASCII (fmpy, FMI Library):
 * an FMU extracted under "/tmp/Müller #2/100%" arrives as file:///tmp/M%C3%BCller%20%232/100%25.
 * pythonfmu's binary decodes only "%20", so the path is decoded here, checked, and handed on
 * as a plain path. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int resource_folder(const char *uri, char *out, size_t n, char *err, size_t en)
{
    if (!uri || !*uri) {
        snprintf(err, en, "no fmuResourceLocation given (FMI 2.0 section 2.1.5 requires the "
                 "URI of the FMU's resources folder)");
        return 0;
    }
    /* RFC 8089: file:///path, file://localhost/path, file:/path; any other host or scheme
     * (http:, a bare path) names no folder of this machine */
    const char *p = uri;
    if (strncasecmp(p, "file:", 5)) {
        snprintf(err, en, "fmuResourceLocation '%.2000s' is not a file: URI; this FMU loads its "
                 "resources from a local folder only", uri);
        return 0;
    }
    p += 5;
    if (p[0] == '/' && p[1] == '/') {
        const char *host = p + 2, *slash = strchr(host, '/');
        size_t len = slash ? (size_t)(slash - host) : strlen(host);
        if (!slash || (len && !(len == 9 && !strncasecmp(host, "localhost", 9)))) {
            snprintf(err, en, "fmuResourceLocation '%.2000s' names a host (%.*s), not a folder "
                     "of this machine", uri, (int)(len > 200 ? 200 : len), host);
            return 0;
        }
        p = slash;
    }
    if (*p != '/') {
        snprintf(err, en, "fmuResourceLocation '%.2000s' has no absolute path", uri);
        return 0;
    }
    /* percent-decoding (RFC 3986 section 2.1); a '%' not followed by two hex digits, an
     * encoded NUL or a path longer than PATH_MAX is refused, never truncated */
    size_t j = 0;
    for (; *p; p++) {
        unsigned char b = (unsigned char)*p;
        if (b == '%') {
            int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
            if (lo < 0 || (hi == 0 && lo == 0)) {
                snprintf(err, en, "fmuResourceLocation '%.2000s': '%%' at offset %zu is not "
                         "followed by two hexadecimal digits of a byte other than 0", uri,
                         (size_t)(p - uri));
                return 0;
            }
            b = (unsigned char)(hi * 16 + lo);
            p += 2;
        }
        if (j + 1 >= n) {
            snprintf(err, en, "fmuResourceLocation '%.2000s' is longer than a path may be", uri);
            return 0;
        }
        out[j++] = (char)b;
    }
    out[j] = 0;
    while (j > 1 && out[j - 1] == '/') out[--j] = 0;
    struct stat st;
    if (stat(out, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, en, "the resources folder '%.2000s' (fmuResourceLocation '%.2000s') does "
                 "not exist", out, uri);
        return 0;
    }
    char module[PATH_MAX + 32];
    snprintf(module, sizeof module, "%s/slavemodule.txt", out);
    if (access(module, R_OK)) {
        snprintf(err, en, "the folder '%.2000s' (fmuResourceLocation '%.2000s') has no "
                 "slavemodule.txt: it is not the resources folder of this FMU", out, uri);
        return 0;
    }
    return 1;
}

int alias_if_needed(char *path, size_t n, char **tmpdir, char *err, size_t en)
{
    *tmpdir = NULL;
    if (!strstr(path, "%20")) return 1;
    /* the link stands for the FMU's folder (the resources folder's parent): the slave finds
     * its binaries/ beside resources/ */
    char *slash = strrchr(path, '/');
    if (!slash || slash == path) {
        snprintf(err, en, "the resources folder '%.2000s' has no parent folder", path);
        return 0;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/embed-fmu-XXXXXX", tmp && *tmp && !strstr(tmp, "%20")
             ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(err, en, "the resources folder '%.2000s' has \"%%20\" in its name and a link "
                 "to it could not be made (mkdtemp %s: %s)", path, dir, strerror(errno));
        return 0;
    }
    char link[PATH_MAX], alias[PATH_MAX];
    *slash = 0;
    snprintf(link, sizeof link, "%s/fmu", dir);
    int bad = symlink(path, link) ? errno : 0;
    *slash = '/';
    int len = snprintf(alias, sizeof alias, "%s%s", link, slash);
    if (bad || len < 0 || (size_t)len >= n || (size_t)len >= sizeof alias) {
        snprintf(err, en, "the resources folder '%.2000s' has \"%%20\" in its name and a link "
                 "to it could not be made (%s)", path, bad ? strerror(bad) : "path too long");
        unlink(link);
        rmdir(dir);
        return 0;
    }
    memcpy(path, alias, (size_t)len + 1);
    *tmpdir = strdup(dir);
    return 1;
}

void remove_alias(char *tmpdir)
{
    if (!tmpdir) return;
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/fmu", tmpdir);
    unlink(link);
    rmdir(tmpdir);
    free(tmpdir);
}
