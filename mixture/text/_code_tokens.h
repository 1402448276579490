/* The code-language scorer's passes (mixture/text/code_language.py) in C: the head it reads (`head_py`: comment
 * lines cut to their marker, docstrings emptied, non-blank lines counted), then its tokens (`passes_py`: the line
 * starts that _LINE_START's re.sub cuts away, then _REST's findall over what is left). Every branch below follows one
 * alternative of those patterns, in their order; the Python passes stay the reference
 * (tests/text/test_signals_kernel.py compares both, token by token and in order of first occurrence, which the
 * scores' float sums depend on). Included by _signals.c, after its character classes, SpanSet and the per-kind
 * helpers: the head is copied to UCS4, so `starts_4`, `strip_span_4` and `line_end_4` read it. */

#define BLANK(c) ((c) != '\n' && IS_SPACE(c))   /* [^\S\n] */
#define AT_EOL(s, i, n) ((i) >= (n) || (s)[i] == '\n')  /* (?m)$ */

static Py_ssize_t skip_blanks(const Py_UCS4 *s, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && BLANK(s[i])) i++;
    return i;
}

/* `"(?:[^"\\\n]|\\.)*`: the end of a JSON string's body from just past its opening quote */
static Py_ssize_t string_body(const Py_UCS4 *s, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && s[i] != '"' && s[i] != '\n') {
        if (s[i] == '\\') {
            if (i + 1 >= n || s[i + 1] == '\n') break;
            i += 2;
        } else
            i++;
    }
    return i;
}

/* `[^\S\n]*,?[^\S\n]*$` from i: its end, or -1 */
static Py_ssize_t value_tail(const Py_UCS4 *s, Py_ssize_t i, Py_ssize_t n) {
    i = skip_blanks(s, i, n);
    if (i < n && s[i] == ',') i = skip_blanks(s, i + 1, n);
    return AT_EOL(s, i, n) ? i : -1;
}

/* a JSON key's optional plain value after its colon (the group after `:` in _LINE_START's jkey): its end, or -1 */
static Py_ssize_t json_value(const Py_UCS4 *s, Py_ssize_t i, Py_ssize_t n) {
    i = skip_blanks(s, i, n);
    if (i >= n) return -1;
    if (s[i] == '"') {
        Py_ssize_t e = string_body(s, i + 1, n);
        if (e < n && s[e] == '"') return value_tail(s, e + 1, n);
        return e == n ? n : -1;  /* a string still open at the end of the text (`…\Z`) */
    }
    Py_ssize_t d = s[i] == '-' && i + 1 < n && Py_UNICODE_ISDECIMAL(s[i + 1]) ? i + 1 : i;
    if (Py_UNICODE_ISDECIMAL(s[d])) {
        Py_ssize_t e = d + 1;
        while (e < n && (IS_WORD(s[e]) || s[e] == '.' || s[e] == '+' || s[e] == '-')) e++;
        return value_tail(s, e, n);
    }
    static const char *WORDS[] = {"true", "false", "null", NULL};
    for (const char **w = WORDS; *w; w++)
        if (starts_4(s, i, n, *w)) {
            Py_ssize_t e = value_tail(s, i + (Py_ssize_t)strlen(*w), n);
            if (e >= 0) return e;
        }
    return -1;
}

/* `[.?!,;]\s|[.?!]$` somewhere in s[a:b] stripped: a `key: a sentence.` line is dialogue, not data */
static int sentence(const Py_UCS4 *s, Py_ssize_t a, Py_ssize_t b) {
    if (!strip_span_4(s, &a, &b)) return 0;
    for (Py_ssize_t i = a; i < b; i++) {
        Py_UCS4 c = s[i];
        if ((c == '.' || c == '?' || c == '!' || c == ',' || c == ';') && i + 1 < b && IS_SPACE(s[i + 1])) return 1;
    }
    return s[b - 1] == '.' || s[b - 1] == '?' || s[b - 1] == '!';
}

/* adds one to counts[key] (a str made of s[a:b], or the C string `name` when it is not NULL) */
static int count_key(PyObject *counts, const char *name, const Py_UCS4 *s, Py_ssize_t a, Py_ssize_t b) {
    PyObject *key = name ? PyUnicode_FromString(name) : PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, s + a, b - a);
    if (!key) return -1;
    PyObject *old = PyDict_GetItemWithError(counts, key);
    PyObject *value = old ? PyLong_FromSsize_t(PyLong_AsSsize_t(old) + 1) : PyErr_Occurred() ? NULL : PyLong_FromLong(1);
    int rc = value ? PyDict_SetItem(counts, key, value) : -1;
    Py_XDECREF(value);
    Py_DECREF(key);
    return rc;
}

/* the markers `(?P<start>…)` matches after a line's blanks, in the pattern's order: then END_LINE, a `$` (the
 * line ends there), or DIGIT, a `\d` (=head1) */
enum { ANY, END_LINE, DIGIT };
static const struct { const char *text; int then; } STARTS[] = {
    {"--", END_LINE}, {"#!", ANY}, {"#include", ANY}, {"#define", ANY}, {"#if", ANY}, {"#endif", ANY}, {"#[", ANY},
    {"//", ANY}, {"/*", ANY}, {"*/", ANY}, {"=head", DIGIT}, {"=cut", ANY}, {"=item", ANY}, {"=pod", ANY}, {"---", END_LINE}, {"}", END_LINE},
    {"end", END_LINE}, {"fi", END_LINE}, {"done", END_LINE}, {"esac", END_LINE}, {"then", END_LINE},
    {"else", END_LINE}, {"do", END_LINE}, {NULL, ANY}};

/* _LINE_START at the newline s[p]: the end of its match (counted in `starts`), 0 when it does not match, -1 on an
 * error */
static Py_ssize_t line_start(const Py_UCS4 *s, Py_ssize_t p, Py_ssize_t n, PyObject *starts) {
    Py_ssize_t q = skip_blanks(s, p + 1, n);
    if (q >= n) return 0;
    /* (?P<yaml>-[^\S\n]+)?(?P<key>[A-Za-z_][\w.-]*):(?:[^\S\n][^\n]*)?$ */
    Py_ssize_t k = q;
    int item = 0;
    if (s[k] == '-' && k + 1 < n && BLANK(s[k + 1])) {
        k = skip_blanks(s, k + 1, n);
        item = 1;
    }
    if (k < n && (IS_ASCII_ALPHA(s[k]) || s[k] == '_')) {
        Py_ssize_t j = k + 1;
        while (j < n && (IS_WORD(s[j]) || s[j] == '.' || s[j] == '-')) j++;
        if (j < n && s[j] == ':') {
            Py_ssize_t c = j + 1, e = -1;
            if (c < n && BLANK(s[c]))
                e = line_end_4(s, c, n);
            else if (AT_EOL(s, c, n))
                e = c;
            if (e >= 0) {
                if (!sentence(s, c, e) && count_key(starts, item ? "ylist" : "ykey", NULL, 0, 0) < 0) return -1;
                return e;
            }
        }
    }
    /* (?P<jkey>"[^"\n]{1,80}"[^\S\n]*:(?:<a plain value to the line's end>)?) */
    if (s[q] == '"') {
        Py_ssize_t j = q + 1;
        while (j < n && s[j] != '"' && s[j] != '\n') j++;
        if (j < n && s[j] == '"' && j - q - 1 >= 1 && j - q - 1 <= 80) {
            j = skip_blanks(s, j + 1, n);
            if (j < n && s[j] == ':') {
                Py_ssize_t e = json_value(s, j + 1, n);
                if (count_key(starts, "jkey", NULL, 0, 0) < 0) return -1;
                return e >= 0 ? e : j + 1;
            }
        }
    }
    /* (?P<gogroup>(?:var|const|import|type)[^\S\n]*\($) */
    static const char *GROUPS[] = {"var", "const", "import", "type", NULL};
    for (const char **w = GROUPS; *w; w++)
        if (s[q] == (Py_UCS4)(unsigned char)**w && starts_4(s, q, n, *w)) {
            Py_ssize_t j = skip_blanks(s, q + (Py_ssize_t)strlen(*w), n);
            if (j < n && s[j] == '(' && AT_EOL(s, j + 1, n)) {
                if (count_key(starts, "go (", NULL, 0, 0) < 0) return -1;
                return j + 1;
            }
        }
    /* (?P<start>\#(?=[^\S\n]|$)|--$|\#!|…|do$) */
    Py_ssize_t e = 0;
    if (s[q] == '#' && (AT_EOL(s, q + 1, n) || BLANK(s[q + 1])))
        e = q + 1;
    for (int i = 0; !e && STARTS[i].text; i++) {
        if (s[q] != (Py_UCS4)(unsigned char)STARTS[i].text[0] || !starts_4(s, q, n, STARTS[i].text)) continue;
        Py_ssize_t len = (Py_ssize_t)strlen(STARTS[i].text);
        if (STARTS[i].then == DIGIT) {
            if (q + len < n && Py_UNICODE_ISDECIMAL(s[q + len])) e = q + len + 1;
        } else if (STARTS[i].then == ANY || AT_EOL(s, q + len, n))
            e = q + len;
    }
    if (e && count_key(starts, NULL, s, q, e) < 0) return -1;
    return e;
}

/* _REST at s[i]: the end of the token that starts there, or i when none does */
static Py_ssize_t rest_token(const Py_UCS4 *s, Py_ssize_t i, Py_ssize_t n) {
    Py_UCS4 c = s[i], d = i + 1 < n ? s[i + 1] : 0;
    switch (c) {
    case '"':
        return starts_4(s, i, n, "\"\"\"") ? i + 3 : i;
    case '<': {
        Py_ssize_t j = i + 1 + (d == '/');
        if (j < n && IS_ASCII_ALPHA(s[j])) {  /* </?[A-Za-z][\w:.-]* */
            for (j++; j < n && (IS_WORD(s[j]) || s[j] == ':' || s[j] == '.' || s[j] == '-'); j++);
            return j;
        }
        if (starts_4(s, i, n, "<?php") || starts_4(s, i, n, "<?xml")) return i + 5;
        if (starts_4(s, i, n, "<!DOCTYPE")) return i + 9;
        if (d == '<' && i + 2 < n) {  /* <<(?=['"~A-Z_]) */
            Py_UCS4 e = s[i + 2];
            if (e == '\'' || e == '"' || e == '~' || e == '_' || (e >= 'A' && e <= 'Z')) return i + 2;
        }
        return i;
    }
    case '?':
        return d == '>' ? i + 2 : i;
    case ':':
        return d == ':' || d == '=' ? i + 2 : i;
    case '-':
        return d == '>' ? i + 2 : i;
    case '=':
    case '!':
        if (c == '=' && (d == '>' || d == '~')) return i + 2;
        /* (?<![=!])[=!]==(?!=) */
        if (d == '=' && i + 2 < n && s[i + 2] == '=' && (i == 0 || (s[i - 1] != '=' && s[i - 1] != '!')) &&
            !(i + 3 < n && s[i + 3] == '='))
            return i + 3;
        return i;
    case '|':
        return d == '|' ? i + 2 : i;
    case '&':
        return d == '&' ? i + 2 : i;
    case ')':
        return d == ';' ? i + 2 : i;
    case '{':
        return i + 1;
    case '}':
        return d == ';' ? i + 2 : i;
    case ';':
        return AT_EOL(s, i + 1, n) ? i + 1 : i;
    }
    if (c == 'm' && d == 'y' && i + 2 < n && BLANK(s[i + 2])) {  /* my[^\S\n](?=[^\S\n]*[$@%(]) */
        Py_ssize_t j = skip_blanks(s, i + 3, n);
        if (j < n && (s[j] == '$' || s[j] == '@' || s[j] == '%' || s[j] == '(')) return i + 3;
    }
    if (IS_ASCII_ALPHA(c) || c == '_' || c == '$' || c == '@' || c == '%') {  /* [A-Za-z_$@%][\w$]* */
        Py_ssize_t j = i + 1;
        while (j < n && (IS_WORD(s[j]) || s[j] == '$')) j++;
        return j;
    }
    return i;
}

/* the distinct spans of a SpanSet's buffer in order of first occurrence, as {str: count} */
static PyObject *ordered_counts(const SpanSet *set, const Py_ssize_t *order, Py_ssize_t n_order,
                                const Py_ssize_t *lengths) {
    PyObject *counts = PyDict_New();
    for (Py_ssize_t k = 0; counts && k < n_order; k++) {
        const char *p = set->base + order[k] * 4;
        uint64_t h = hash_bytes((const unsigned char *)p, (size_t)lengths[k] * 4);
        Slot *x = spanset_find(set, p, lengths[k], h);
        PyObject *key = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, p, lengths[k]);
        PyObject *value = key ? PyLong_FromSsize_t(x->count) : NULL;
        if (!value || PyDict_SetItem(counts, key, value) < 0) Py_CLEAR(counts);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return counts;
}

static PyObject *code_tokens(PyObject *self, PyObject *obj) {
    if (check_str(obj) < 0) return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(obj), n = len + 1;
    Py_UCS4 *src = PyMem_Malloc((size_t)n * 4), *rest = PyMem_Malloc((size_t)n * 4);
    Py_ssize_t *order = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t) * 2);
    PyObject *starts = PyDict_New(), *words = NULL, *result = NULL;
    SpanSet set = {0};
    if (!src || !rest || !order) {
        PyErr_NoMemory();
        goto done;
    }
    if (!starts) goto done;
    src[0] = '\n';  /* "\n" + head, as the Python pass reads it */
    if (len && !PyUnicode_AsUCS4(obj, src + 1, len, 0)) goto done;
    Py_ssize_t r = 0;
    for (Py_ssize_t i = 0; i < n;) {  /* re.sub: each matched line start becomes "\n" */
        if (src[i] == '\n') {
            Py_ssize_t e = line_start(src, i, n, starts);
            if (e < 0) goto done;
            if (e > 0) {
                rest[r++] = '\n';
                i = e;
                continue;
            }
        }
        rest[r++] = src[i++];
    }
    if (spanset_init(&set, rest, 4, 256) < 0) goto done;
    Py_ssize_t *lengths = order + n, n_order = 0;
    for (Py_ssize_t i = 0; i < r;) {  /* findall */
        Py_ssize_t e = rest_token(rest, i, r);
        if (e == i) {
            i++;
            continue;
        }
        size_t before = set.used;
        if (spanset_add(&set, i, e - i) < 0) goto done;
        if (set.used > before) {
            order[n_order] = i;
            lengths[n_order++] = e - i;
        }
        i = e;
    }
    words = ordered_counts(&set, order, n_order, lengths);
    if (words) result = PyTuple_Pack(2, starts, words);
done:
    spanset_free(&set);
    PyMem_Free(src);
    PyMem_Free(rest);
    PyMem_Free(order);
    Py_XDECREF(starts);
    Py_XDECREF(words);
    return result;
}

/* _COMMENT's marker after a line's blanks at s[q]: its end, or 0 when the line is no comment line */
static Py_ssize_t comment_marker(const Py_UCS4 *s, Py_ssize_t q, Py_ssize_t n) {
    if (q >= n) return 0;
    Py_UCS4 c = s[q], d = q + 1 < n ? s[q + 1] : 0;
    if (c == '#') {  /* #(?![!\[]|include|define|if|endif|else|pragma|undef) */
        static const char *NOT_AFTER[] = {"!", "[", "include", "define", "if", "endif", "else", "pragma", "undef", NULL};
        for (const char **w = NOT_AFTER; *w; w++)
            if (starts_4(s, q + 1, n, *w)) return 0;
        return q + 1;
    }
    if (c == '/' && (d == '/' || d == '*')) {  /* //+ and /\*+ */
        Py_ssize_t e = q + 1;
        while (e < n && s[e] == d) e++;
        return e;
    }
    if (c == '*') {  /* \*+(?!/): a run of stars before a slash gives its last one back */
        Py_ssize_t e = q;
        while (e < n && s[e] == '*') e++;
        if (e < n && s[e] == '/') return e - q >= 2 ? e - 1 : 0;
        return e;
    }
    if (c == '-' && d == '-' && q + 2 < n && IS_SPACE(s[q + 2])) return q + 2;  /* --(?=\s) */
    return 0;
}

/* the first `"""` at or after `from`, or -1 */
static Py_ssize_t find_quotes(const Py_UCS4 *s, Py_ssize_t from, Py_ssize_t n) {
    for (Py_ssize_t i = from; i + 2 < n; i++)
        if (s[i] == '"' && s[i + 1] == '"' && s[i + 2] == '"') return i;
    return -1;
}

static PyObject *code_head(PyObject *self, PyObject *obj) {
    if (check_str(obj) < 0) return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(obj), n = len + 1;
    Py_UCS4 *src = PyMem_Malloc((size_t)n * 4), *cut = PyMem_Malloc((size_t)(n + 8) * 4), *out = NULL;
    PyObject *result = NULL;
    if (!src || !cut) {
        PyErr_NoMemory();
        goto done;
    }
    src[0] = '\n';
    if (len && !PyUnicode_AsUCS4(obj, src + 1, len, 0)) goto done;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n;) {  /* _COMMENT.sub("\n\\1", "\n" + head): a comment line keeps its marker */
        if (src[i] == '\n') {
            Py_ssize_t e = comment_marker(src, skip_blanks(src, i + 1, n), n);
            if (e) {
                for (Py_ssize_t j = i; j < e; j++) cut[m++] = src[j];
                i = line_end_4(src, e, n);
                continue;
            }
        }
        cut[m++] = src[i++];
    }
    const Py_UCS4 *head = cut + 1;  /* the "\n" in front goes */
    Py_ssize_t h = m - 1;
    Py_ssize_t open = find_quotes(head, 0, h);
    if (open >= 0) {  /* _DOCSTRING.sub('""" """', head): each docstring emptied */
        if (!(out = PyMem_Malloc((size_t)(h + 8) * 4))) {
            PyErr_NoMemory();
            goto done;
        }
        static const Py_UCS4 EMPTIED[] = {'"', '"', '"', ' ', '"', '"', '"'};
        Py_ssize_t k = 0, i = 0;
        for (Py_ssize_t close; open >= 0 && (close = find_quotes(head, open + 3, h)) >= 0;
             open = find_quotes(head, i, h)) {
            while (i < open) out[k++] = head[i++];
            for (int j = 0; j < 7; j++) out[k++] = EMPTIED[j];
            i = close + 3;
        }
        while (i < h) out[k++] = head[i++];
        head = out;
        h = k;
    }
    Py_ssize_t lines = 0;
    for (Py_ssize_t i = 0; i <= h; i++) {  /* non-blank lines of head.split("\n") */
        Py_ssize_t e = line_end_4(head, i, h);
        lines += last_nonspace_4(head, i, e) >= 0;
        i = e;
    }
    PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, head, h);
    if (text) result = Py_BuildValue("(Nn)", text, lines > 1 ? lines : 1);
done:
    PyMem_Free(src);
    PyMem_Free(cut);
    PyMem_Free(out);
    return result;
}
