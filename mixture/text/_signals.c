/* One pass per signal family over a Python str (any kind), counting exactly what the regular expressions and str
 * methods of mixture/text/{normalize,gates,content_type,quality}.py count. Those Python definitions stay the
 * reference: tests/pipeline/test_signals_kernel.py checks that both give equal counts. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Character classes of Python's str methods and re (\s, \w, [^\W\d_]); a table below 256, the Unicode database
 * above it. */
static unsigned char SPACE[256], ALNUM[256], LETTER[256];
static unsigned char ASCII_WORD[128]; /* word_hashes: ASCII digits -> '0', letters lower-cased, '_' kept, the rest ' ' */
#define IS_SPACE(c) ((Py_UCS4)(c) < 256 ? SPACE[(Py_UCS4)(c)] : Py_UNICODE_ISSPACE(c))
#define IS_ALNUM(c) ((Py_UCS4)(c) < 256 ? ALNUM[(Py_UCS4)(c)] : Py_UNICODE_ISALNUM(c))
#define IS_WORD(c) ((c) == '_' || IS_ALNUM(c))
#define IS_ASCII_ALPHA(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define IS_LETTER(c) ((Py_UCS4)(c) < 256 ? LETTER[(Py_UCS4)(c)] : (Py_UNICODE_ISALNUM(c) && !Py_UNICODE_ISDECIMAL(c)))

/* Scripts written without spaces between words (docs/build.md, Gates): each letter of them is one word of the
 * word gate. Han (with its radicals, compatibility ideographs and bopomofo), Hiragana, Katakana, Thai, Lao,
 * Myanmar, Khmer, and the CJK punctuation and fullwidth forms written with them (not letters: they separate);
 * Hangul is written with spaces and is not here. Keep equal to gates.UNSPACED_RANGES. */
static const Py_UCS4 UNSPACED[][2] = {
    {0x0E00, 0x0EFF}, {0x1000, 0x109F}, {0x1780, 0x17FF}, {0x19E0, 0x19FF}, {0x2E80, 0x2FDF},
    {0x3000, 0x312F}, {0x31A0, 0x31BF}, {0x31F0, 0x31FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},
    {0xA9E0, 0xA9FF}, {0xAA60, 0xAA7F}, {0xF900, 0xFAFF}, {0xFE30, 0xFE6F}, {0xFF00, 0xFFEF}, {0x16FE0, 0x16FFF},
    {0x1B000, 0x1B16F}, {0x20000, 0x323AF},
};

static inline int in_unspaced_script(Py_UCS4 c) {
    if (c < 0x0E00) return 0;
    for (size_t i = 0; i < sizeof(UNSPACED) / sizeof(UNSPACED[0]); i++) {
        if (c < UNSPACED[i][0]) return 0;
        if (c <= UNSPACED[i][1]) return 1;
    }
    return 0;
}

/* a letter of a script written without spaces: the embedder's terms of it are letter bigrams (fit/embed.py) */
#define UNSPACED_LETTER(c) ((Py_UCS4)(c) >= 0x0E00 && in_unspaced_script((Py_UCS4)(c)) && IS_LETTER(c))

static void init_tables(void) {
    for (Py_UCS4 c = 0; c < 256; c++) {
        SPACE[c] = Py_UNICODE_ISSPACE(c) != 0;
        ALNUM[c] = Py_UNICODE_ISALNUM(c) != 0;
        LETTER[c] = ALNUM[c] && !Py_UNICODE_ISDECIMAL(c);
        if (c < 128)
            ASCII_WORD[c] = c >= '0' && c <= '9' ? '0' : c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32)
                          : (ALNUM[c] || c == '_') ? (unsigned char)c : ' ';
    }
}

/* ---- a counting set of spans of one buffer (lines, words), compared by content ---------------------------- */

typedef struct {
    uint64_t hash;
    Py_ssize_t start, len, count; /* count 0: an empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, used;
    const char *base;
    int width; /* bytes per character */
} SpanSet;

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

static int spanset_init(SpanSet *s, const void *base, int width, size_t expected) {
    size_t cap = 64;
    while (cap < expected * 2) cap <<= 1;
    s->slots = PyMem_Calloc(cap, sizeof(Slot));
    s->cap = cap;
    s->used = 0;
    s->base = base;
    s->width = width;
    if (!s->slots) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void spanset_free(SpanSet *s) {
    PyMem_Free(s->slots);
    s->slots = NULL;
}

static int spanset_grow(SpanSet *s) {
    size_t cap = s->cap * 2;
    Slot *slots = PyMem_Calloc(cap, sizeof(Slot));
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].count) continue;
        size_t j = s->slots[i].hash & (cap - 1);
        while (slots[j].count) j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

/* The slot of the span's content (count 0 when absent; its index is where to insert). */
static Slot *spanset_find(const SpanSet *s, const char *p, Py_ssize_t len, uint64_t h) {
    size_t bytes = (size_t)len * s->width;
    for (size_t j = h & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
        Slot *x = &s->slots[j];
        if (!x->count || (x->hash == h && x->len == len && memcmp(s->base + x->start * s->width, p, bytes) == 0))
            return x;
    }
}

/* Adds one occurrence of the span [start, start + len); returns -1 on a memory error. */
static int spanset_add(SpanSet *s, Py_ssize_t start, Py_ssize_t len) {
    if ((s->used + 1) * 2 > s->cap && spanset_grow(s) < 0) return -1;
    const char *p = s->base + start * s->width;
    uint64_t h = hash_bytes((const unsigned char *)p, (size_t)len * s->width);
    Slot *x = spanset_find(s, p, len, h);
    if (!x->count) {
        *x = (Slot){h, start, len, 0};
        s->used++;
    }
    x->count++;
    return 0;
}

/* ---- stopwords (set once from Python) ------------------------------------------------------------------ */

static SpanSet STOPWORDS;
static PyObject *STOPWORD_TEXT; /* the bytes the STOPWORDS spans point into */
static uint32_t STOP_FIRST[33];  /* by length: a bit per first letter a-z of the stopwords of that length */

/* word: lower-case ASCII letters */
static int is_stopword(const char *word, Py_ssize_t len) {
    if (len > 32 || !(STOP_FIRST[len] >> (word[0] - 'a') & 1)) return 0;
    return spanset_find(&STOPWORDS, word, len, hash_bytes((const unsigned char *)word, (size_t)len))->count > 0;
}

static PyObject *set_stopwords(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg) || !PyUnicode_IS_ASCII(arg)) {
        PyErr_SetString(PyExc_ValueError, "stopwords: an ASCII str of lower-case words separated by spaces");
        return NULL;
    }
    const char *p = (const char *)PyUnicode_1BYTE_DATA(arg);
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    for (Py_ssize_t a = 0; a < n;) {  /* check every word before the current set is replaced */
        Py_ssize_t e = a;
        while (e < n && p[e] != ' ') e++;
        for (Py_ssize_t i = a; i < e; i++)
            if (p[i] < 'a' || p[i] > 'z' || e - a > 32) {
                PyErr_Format(PyExc_ValueError, "stopwords: '%.*s' is not a lower-case word of at most 32 letters",
                             (int)(e - a < 40 ? e - a : 40), p + a);
                return NULL;
            }
        a = e + 1;
    }
    PyObject *bytes = PyUnicode_AsASCIIString(arg);
    if (!bytes) return NULL;
    SpanSet words;
    if (spanset_init(&words, PyBytes_AS_STRING(bytes), 1, 256) < 0) {
        Py_DECREF(bytes);
        return NULL;
    }
    uint32_t first[33] = {0};
    p = PyBytes_AS_STRING(bytes);
    for (Py_ssize_t a = 0; a < n;) {
        Py_ssize_t e = a;
        while (e < n && p[e] != ' ') e++;
        if (e > a) {
            if (spanset_add(&words, a, e - a) < 0) {
                spanset_free(&words);
                Py_DECREF(bytes);
                return NULL;
            }
            first[e - a] |= 1u << (p[a] - 'a');
        }
        a = e + 1;
    }
    if (STOPWORDS.slots) spanset_free(&STOPWORDS);
    STOPWORDS = words;
    memcpy(STOP_FIRST, first, sizeof STOP_FIRST);
    Py_XSETREF(STOPWORD_TEXT, bytes);
    Py_RETURN_NONE;
}

/* ---- the per-kind counting functions -------------------------------------------------------------------- */

typedef struct {
    int few_words;
    Py_ssize_t symbols, lines, repeated;
} GateCounts;

typedef struct {
    Py_ssize_t lines, agent, letters, markup, code, structured, math, sentences;
    int many_words, ascii;
} TypeCounts;

typedef struct {
    Py_ssize_t lines, long_lines, repeated_long, clause_end, letters;
} QualityCounts;

typedef struct {
    Py_ssize_t words, chars, stopwords, first_words, first_distinct;
} WordCounts;

#define FIRST_WORDS 1000

/* The word hashes of a batch of texts */
typedef struct {
    uint64_t *hashes;
    Py_ssize_t n, cap;
    unsigned char *scratch; /* the UTF-8 bytes of the word being read */
    Py_ssize_t cap_scratch;
} Hashes;

static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t size);

static int hashes_scratch(Hashes *h, Py_ssize_t len) { return grow((void **)&h->scratch, &h->cap_scratch, len, 1); }

static inline int hashes_append(Hashes *h, uint64_t value) {
    if (h->n + 1 > h->cap && grow((void **)&h->hashes, &h->cap, h->n + 1, 8) < 0) return -1;
    h->hashes[h->n++] = value;
    return 0;
}

/* splitmix64's finaliser (mixture/text/shingles.py `mix64`) */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

/* `_hash_words` of one word: its bytes read 8 at a time (little-endian, the last read cut short) mixed into the
 * length times the golden ratio */
static inline uint64_t word_hash(const unsigned char *p, size_t n) {
    uint64_t acc = (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= n; i += 8) {  /* a whole 8-byte read is the little-endian word */
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc = mix64(acc ^ w);
    }
#endif
    for (; i < n; i += 8) {
        uint64_t w = 0;
        size_t k = n - i < 8 ? n - i : 8;
        for (size_t b = 0; b < k; b++) w |= (uint64_t)p[i + b] << (8 * b);
        acc = mix64(acc ^ w);
    }
    return acc;
}

/* writes c as UTF-8 at o; returns the bytes written */
static inline Py_ssize_t utf8(Py_UCS4 c, unsigned char *o) {
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* Distinct terms of a chunk of texts and, per text, how often each occurs */
typedef struct {
    uint32_t *chars; /* the distinct terms' code points, back to back */
    Py_ssize_t n_chars, cap_chars;
    int64_t *offsets; /* n_terms + 1 byte offsets into chars */
    int64_t *last_row, *last_pair; /* per term: the last text it was seen in, and that text's pair */
    Py_ssize_t n_terms, cap_terms;
    Py_ssize_t *table; /* open addressing: term id + 1, 0 for an empty slot */
    uint64_t *table_hash;
    size_t cap_table;
    int64_t *rows, *term_ids, *counts; /* (text, term, occurrences) pairs */
    Py_ssize_t n_pairs, cap_pairs;
    uint32_t *scratch; /* the token being counted */
    Py_ssize_t cap_scratch;
} Terms;

static void terms_free(Terms *t) {
    void *bufs[] = {t->chars, t->offsets, t->last_row, t->last_pair, t->table, t->table_hash, t->rows,
                    t->term_ids, t->counts, t->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) PyMem_Free(bufs[i]);
}

/* grows *buf (of *cap items of `size` bytes) to hold `need` items */
static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t n = need * 2 > 64 ? need * 2 : 64;
    void *p = PyMem_Realloc(*buf, (size_t)n * size);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = n;
    return 0;
}

/* grows three parallel int64 arrays of capacity *cap to hold `need` items each */
static int grow3(int64_t **a, int64_t **b, int64_t **c, Py_ssize_t *cap, Py_ssize_t need) {
    Py_ssize_t ca = *cap, cb = *cap;
    if (grow((void **)a, &ca, need, 8) < 0 || grow((void **)b, &cb, need, 8) < 0 || grow((void **)c, cap, need, 8) < 0)
        return -1;
    return 0;
}

static int terms_scratch(Terms *t, Py_ssize_t len) { return grow((void **)&t->scratch, &t->cap_scratch, len, 4); }

static int terms_rehash(Terms *t, size_t cap) {
    Py_ssize_t *table = PyMem_Calloc(cap, sizeof *table);
    uint64_t *hashes = PyMem_Calloc(cap, sizeof *hashes);
    if (!table || !hashes) {
        PyMem_Free(table);
        PyMem_Free(hashes);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < t->cap_table; i++) {
        if (!t->table[i]) continue;
        size_t j = t->table_hash[i] & (cap - 1);
        while (table[j]) j = (j + 1) & (cap - 1);
        table[j] = t->table[i];
        hashes[j] = t->table_hash[i];
    }
    PyMem_Free(t->table);
    PyMem_Free(t->table_hash);
    t->table = table;
    t->table_hash = hashes;
    t->cap_table = cap;
    return 0;
}

/* one occurrence in text `row` of the token in scratch[0:len] */
static int terms_count(Terms *t, Py_ssize_t len, int64_t row) {
    if ((size_t)(t->n_terms + 1) * 2 > t->cap_table && terms_rehash(t, t->cap_table ? t->cap_table * 2 : 1024) < 0)
        return -1;
    size_t bytes = (size_t)len * 4;
    uint64_t h = hash_bytes((const unsigned char *)t->scratch, bytes);
    size_t j = h & (t->cap_table - 1);
    Py_ssize_t id = -1;
    for (; t->table[j]; j = (j + 1) & (t->cap_table - 1)) {
        Py_ssize_t cand = t->table[j] - 1;
        if (t->table_hash[j] == h && t->offsets[cand + 1] - t->offsets[cand] == (int64_t)bytes &&
            memcmp((const char *)t->chars + t->offsets[cand], t->scratch, bytes) == 0) {
            id = cand;
            break;
        }
    }
    if (id < 0) {  /* a new term */
        if (grow((void **)&t->chars, &t->cap_chars, t->n_chars + len, 4) < 0 ||
            grow3(&t->offsets, &t->last_row, &t->last_pair, &t->cap_terms, t->n_terms + 2) < 0)
            return -1;
        if (t->n_terms == 0) t->offsets[0] = 0;
        memcpy(t->chars + t->n_chars, t->scratch, bytes);
        t->n_chars += len;
        id = t->n_terms++;
        t->offsets[id + 1] = (int64_t)t->n_chars * 4;
        t->last_row[id] = -1;
        t->table[j] = id + 1;
        t->table_hash[j] = h;
    }
    if (t->last_row[id] == row) {
        t->counts[t->last_pair[id]]++;
        return 0;
    }
    if (grow3(&t->rows, &t->term_ids, &t->counts, &t->cap_pairs, t->n_pairs + 1) < 0) return -1;
    t->rows[t->n_pairs] = row;
    t->term_ids[t->n_pairs] = id;
    t->counts[t->n_pairs] = 1;
    t->last_row[id] = row;
    t->last_pair[id] = t->n_pairs++;
    return 0;
}

static const char *AGENT_NAMES[] = {"User", "Assistant", "System", "Human", "AI", "Action", "Observation",
                                    "Thought", "Tool", NULL};
static const char *CODE_PREFIXES[] = {"def ", "class ", "import ", "#include", "var ", "let ", "const ", "public ",
                                      "private ", "}", "{", "try:", "elif ", "else:", "#!", "self.",
                                      "func ", "package ", "fn ", "pub ", "impl ", "struct ", "enum ", "typedef ",
                                      "static ", "void ", "namespace ", "template", "#define", "#if", "#endif",
                                      "#else", "<?php", "//", "/*", "*/", "* ", "# ", "SELECT ", "CREATE ",
                                      "INSERT ", "echo ", "export ", NULL};
/* a line that is only one of these is code (a block's closing keyword) */
static const char *CODE_LINES[] = {"end", "fi", "done", "esac", "then", "do", "else", NULL};
static const char *MATH_COMMANDS[] = {"frac", "sum", "int", "sqrt", "alpha", "beta", "theta", "cdot", "leq", "geq",
                                      NULL};

/* The vocabulary columns of one text's tokens (vocab_counts) */
typedef struct {
    int64_t *cols;
    Py_ssize_t n_cols, cap_cols;
    uint32_t *scratch; /* the token being looked up */
    Py_ssize_t cap_scratch;
} Columns;

#define CH Py_UCS1
#define F(name) name##_1
#include "_signals_impl.h"
#undef CH
#undef F
#define CH Py_UCS2
#define F(name) name##_2
#include "_signals_impl.h"
#undef CH
#undef F
#define CH Py_UCS4
#define F(name) name##_4
#include "_signals_impl.h"
#undef CH
#undef F

/* calls name_1, name_2 or name_4 on the str's characters; the result goes to `result` */
#define BY_KIND(result, obj, name, ...)                                                                          \
    switch (PyUnicode_KIND(obj)) {                                                                              \
    case PyUnicode_1BYTE_KIND: result = name##_1(PyUnicode_1BYTE_DATA(obj), __VA_ARGS__); break;                \
    case PyUnicode_2BYTE_KIND: result = name##_2(PyUnicode_2BYTE_DATA(obj), __VA_ARGS__); break;                \
    default: result = name##_4(PyUnicode_4BYTE_DATA(obj), __VA_ARGS__); break;                                  \
    }

static int check_str(PyObject *obj) {
    if (PyUnicode_Check(obj)) return 0;
    PyErr_Format(PyExc_TypeError, "expected a str, not %.100s", Py_TYPE(obj)->tp_name);
    return -1;
}

#include "_code_tokens.h"

/* a buffer for "y#": an empty one where nothing was allocated (NULL would give None) */
#define OR_EMPTY(p) ((p) ? (const char *)(p) : "")

static inline Py_ssize_t clip(Py_ssize_t len, Py_ssize_t limit) { return len < limit ? len : limit; }

/* ---- the module's functions ---------------------------------------------------------------------------- */

static PyObject *normalize_flags(PyObject *self, PyObject *obj) {
    if (check_str(obj) < 0) return NULL;
    int cr = 0, trailing = 0, blank4 = 0;
    Py_ssize_t len = PyUnicode_GET_LENGTH(obj);
    switch (PyUnicode_KIND(obj)) {
    case PyUnicode_1BYTE_KIND: normalize_flags_1(PyUnicode_1BYTE_DATA(obj), len, &cr, &trailing, &blank4); break;
    case PyUnicode_2BYTE_KIND: normalize_flags_2(PyUnicode_2BYTE_DATA(obj), len, &cr, &trailing, &blank4); break;
    default: normalize_flags_4(PyUnicode_4BYTE_DATA(obj), len, &cr, &trailing, &blank4); break;
    }
    return Py_BuildValue("(NNN)", PyBool_FromLong(cr), PyBool_FromLong(trailing), PyBool_FromLong(blank4));
}

static PyObject *gate_counts(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t min_words, head_chars;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &min_words, &head_chars) || check_str(obj) < 0) return NULL;
    Py_ssize_t len = PyUnicode_GET_LENGTH(obj), head = clip(len, head_chars);
    GateCounts g = {0};
    int rc;
    BY_KIND(rc, obj, gate_counts, len, min_words, head, &g);
    if (rc < 0) return NULL;
    return Py_BuildValue("(Nnnnn)", PyBool_FromLong(g.few_words), g.symbols, head, g.lines, g.repeated);
}

static PyObject *content_type_counts(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t sample_chars;
    if (!PyArg_ParseTuple(args, "On", &obj, &sample_chars) || check_str(obj) < 0) return NULL;
    TypeCounts c = {0};
    Py_ssize_t end = clip(PyUnicode_GET_LENGTH(obj), sample_chars);
    switch (PyUnicode_KIND(obj)) {
    case PyUnicode_1BYTE_KIND: content_type_counts_1(PyUnicode_1BYTE_DATA(obj), end, &c); break;
    case PyUnicode_2BYTE_KIND: content_type_counts_2(PyUnicode_2BYTE_DATA(obj), end, &c); break;
    default: content_type_counts_4(PyUnicode_4BYTE_DATA(obj), end, &c); break;
    }
    return Py_BuildValue("(nnnnnnnNnN)", c.lines, c.agent, c.letters, c.markup, c.code, c.structured, c.math,
                         PyBool_FromLong(c.many_words), c.sentences, PyBool_FromLong(c.ascii));
}

static PyObject *quality_counts(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t head_chars;
    if (!PyArg_ParseTuple(args, "On", &obj, &head_chars) || check_str(obj) < 0) return NULL;
    QualityCounts q = {0};
    int rc;
    BY_KIND(rc, obj, quality_counts, PyUnicode_GET_LENGTH(obj), head_chars, &q);
    if (rc < 0) return NULL;
    return Py_BuildValue("(nnnnn)", q.lines, q.long_lines, q.repeated_long, q.clause_end, q.letters);
}

static PyObject *word_counts(PyObject *self, PyObject *obj) {
    if (check_str(obj) < 0) return NULL;
    if (!STOPWORDS.slots) {  /* mixture.text.quality sets them when it is imported */
        PyErr_SetString(PyExc_RuntimeError, "word_counts: no stopwords; call set_stopwords first");
        return NULL;
    }
    WordCounts w = {0};
    int rc;
    BY_KIND(rc, obj, word_counts, PyUnicode_GET_LENGTH(obj), &w);
    if (rc < 0) return NULL;
    return Py_BuildValue("(nnnnn)", w.words, w.chars, w.stopwords, w.first_words, w.first_distinct);
}

static PyObject *word_hashes(PyObject *self, PyObject *texts) {
    if (!PyList_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "word_hashes: expected a list of str");
        return NULL;
    }
    Py_ssize_t n_texts = PyList_GET_SIZE(texts);
    Hashes h = {0};
    PyObject *result = NULL;
    int64_t *offsets = PyMem_Malloc((size_t)(n_texts + 1) * sizeof(int64_t));
    if (!offsets) {
        PyErr_NoMemory();
        goto done;
    }
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < n_texts; i++) {
        PyObject *obj = PyList_GET_ITEM(texts, i);
        int rc;
        if (check_str(obj) < 0) goto done;
        /* an ASCII text is lower-cased by the table as it is read; str.lower() of another can turn a non-ASCII
         * character into ASCII ones (the Kelvin sign, İ) */
        PyObject *text = PyUnicode_IS_ASCII(obj) ? Py_NewRef(obj) : PyObject_CallMethod(obj, "lower", NULL);
        if (!text) goto done;
        BY_KIND(rc, text, word_hashes, PyUnicode_GET_LENGTH(text), &h);
        Py_DECREF(text);
        if (rc < 0) goto done;
        offsets[i + 1] = h.n;
    }
    result = Py_BuildValue("(y#y#)", OR_EMPTY(h.hashes), h.n * 8, (const char *)offsets, (n_texts + 1) * 8);
done:
    PyMem_Free(h.hashes);
    PyMem_Free(h.scratch);
    PyMem_Free(offsets);
    return result;
}

static PyObject *term_counts(PyObject *self, PyObject *args) {
    PyObject *texts;
    Py_ssize_t min_len;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &texts, &min_len)) return NULL;
    Terms t = {0};
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); i++) {
        PyObject *obj = PyList_GET_ITEM(texts, i);
        int rc;
        if (check_str(obj) < 0) goto done;
        BY_KIND(rc, obj, term_counts, PyUnicode_GET_LENGTH(obj), min_len, (int64_t)i, &t);
        if (rc < 0) goto done;
    }
    int64_t zero = 0;
    result = Py_BuildValue("(y#y#y#y#y#)", OR_EMPTY(t.chars), t.n_chars * 4,
                           t.n_terms ? (const char *)t.offsets : (const char *)&zero, (t.n_terms + 1) * 8,
                           OR_EMPTY(t.rows), t.n_pairs * 8, OR_EMPTY(t.term_ids), t.n_pairs * 8, OR_EMPTY(t.counts),
                           t.n_pairs * 8);
done:
    terms_free(&t);
    return result;
}

/* ---- a fixed vocabulary: term (UTF-32LE) -> column, held by a capsule --------------------------------- */

typedef struct {
    SpanSet set; /* Slot.count holds column + 1 */
    PyObject *chars; /* the bytes the set's spans point into */
    int64_t n_columns; /* 1 + the largest column */
} Vocabulary;

static void vocabulary_free(PyObject *capsule) {
    Vocabulary *v = PyCapsule_GetPointer(capsule, "mixture.vocabulary");
    if (!v) return;
    spanset_free(&v->set);
    Py_XDECREF(v->chars);
    PyMem_Free(v);
}

/* the int64 offsets buffer of n terms: n + 1 entries, increasing, ending within `len` bytes of characters */
static int check_offsets(const Py_buffer *off, Py_ssize_t n, Py_ssize_t len) {
    const int64_t *o = off->buf;
    if (off->len < (n + 1) * 8) goto bad;
    for (Py_ssize_t i = 0; i < n; i++)
        if (o[i] < 0 || o[i + 1] < o[i] || (o[i + 1] - o[i]) % 4) goto bad;
    if (o[n] > len) goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "offsets do not describe UTF-32 terms in the characters given");
    return -1;
}

static PyObject *vocabulary(PyObject *self, PyObject *args) {
    PyObject *chars;
    Py_buffer off, cols;
    if (!PyArg_ParseTuple(args, "Sy*y*", &chars, &off, &cols)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = cols.len / 8;
    Vocabulary *v = NULL;
    if (check_offsets(&off, n, PyBytes_GET_SIZE(chars)) < 0) goto done;
    v = PyMem_Calloc(1, sizeof *v);
    if (!v || spanset_init(&v->set, PyBytes_AS_STRING(chars), 4, (size_t)n) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        PyMem_Free(v);
        goto done;
    }
    Py_INCREF(chars);
    v->chars = chars;
    const int64_t *o = off.buf, *c = cols.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (c[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "vocabulary: columns must not be negative");
            break;
        }
        if (c[i] >= v->n_columns) v->n_columns = c[i] + 1;
        if ((v->set.used + 1) * 2 > v->set.cap && spanset_grow(&v->set) < 0) break;
        const char *p = PyBytes_AS_STRING(chars) + o[i];
        Py_ssize_t len = (Py_ssize_t)((o[i + 1] - o[i]) / 4);
        uint64_t h = hash_bytes((const unsigned char *)p, (size_t)len * 4);
        Slot *x = spanset_find(&v->set, p, len, h);
        if (!x->count) v->set.used++;
        *x = (Slot){h, o[i] / 4, len, c[i] + 1};
    }
    if (PyErr_Occurred()) {
        spanset_free(&v->set);
        Py_DECREF(chars);
        PyMem_Free(v);
        goto done;
    }
    result = PyCapsule_New(v, "mixture.vocabulary", vocabulary_free);
    if (!result) {
        spanset_free(&v->set);
        Py_DECREF(chars);
        PyMem_Free(v);
    }
done:
    PyBuffer_Release(&off);
    PyBuffer_Release(&cols);
    return result;
}

/* ---- word n-grams and MinHash bins (the numpy definitions in mixture/text/shingles.py are the reference) ---- */

/* the buffer of n uint64 / int64 values, or an error naming what it is */
static int check_words(const Py_buffer *b, const char *what) {
    if (b->len % 8 == 0) return 0;
    PyErr_Format(PyExc_ValueError, "%s: expected 8-byte values, got %zd bytes", what, b->len);
    return -1;
}

static PyObject *ngram_hashes(PyObject *self, PyObject *args) {
    Py_buffer hb, ob;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*y*n", &hb, &ob, &n)) return NULL;
    PyObject *grams = NULL, *docs = NULL, *result = NULL;
    uint64_t *mult = NULL;
    if (check_words(&hb, "hashes") < 0 || check_words(&ob, "offsets") < 0) goto done;
    const uint64_t *h = hb.buf;
    const int64_t *o = ob.buf;
    Py_ssize_t n_words = hb.len / 8, n_texts = ob.len / 8 - 1, m = 0;
    if (n < 1 || n_texts < 0 || o[0] != 0 || o[n_texts] != n_words) {
        PyErr_SetString(PyExc_ValueError, "ngram_hashes: n must be >= 1 and offsets must span the hashes");
        goto done;
    }
    for (Py_ssize_t d = 0; d < n_texts; d++) {
        if (o[d + 1] < o[d]) {
            PyErr_SetString(PyExc_ValueError, "ngram_hashes: offsets must not decrease");
            goto done;
        }
        m += o[d + 1] - o[d] >= n ? o[d + 1] - o[d] - n + 1 : 0;
    }
    mult = PyMem_Malloc((size_t)n * 8);  /* the odd multiplier of each position */
    grams = PyBytes_FromStringAndSize(NULL, m * 8);
    docs = PyBytes_FromStringAndSize(NULL, m * 8);
    if (!mult || !grams || !docs) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n; t++) mult[t] = (0x9E3779B97F4A7C15ULL * (uint64_t)(2 * t + 1)) | 1;
    uint64_t *g = (uint64_t *)PyBytes_AS_STRING(grams);
    int64_t *doc = (int64_t *)PyBytes_AS_STRING(docs);
    for (Py_ssize_t d = 0, j = 0; d < n_texts; d++) {
        for (Py_ssize_t i = o[d]; i + n <= o[d + 1]; i++, j++) {
            uint64_t acc = h[i];
            for (Py_ssize_t t = 1; t < n; t++) acc = acc * mult[t] + h[i + t];
            g[j] = mix64(acc ^ (uint64_t)n);
            doc[j] = d;
        }
    }
    result = PyTuple_Pack(2, grams, docs);
done:
    PyMem_Free(mult);
    Py_XDECREF(grams);
    Py_XDECREF(docs);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&ob);
    return result;
}

static PyObject *minhash_bins(PyObject *self, PyObject *args) {
    Py_buffer gb, db;
    Py_ssize_t n_docs, k;
    unsigned long long seed_mix;
    if (!PyArg_ParseTuple(args, "y*y*nnK", &gb, &db, &n_docs, &k, &seed_mix)) return NULL;
    PyObject *out = NULL;
    if (check_words(&gb, "shingles") < 0 || check_words(&db, "doc") < 0) goto done;
    if (gb.len != db.len || n_docs < 0 || k < 1 || k > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "minhash_bins: one doc per shingle, n_docs >= 0 and 1 <= k < 2**32");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n_docs * k * 8);
    if (!out) goto done;
    uint64_t *bins = (uint64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n_docs * k; i++) bins[i] = UINT64_MAX;
    const uint64_t *sh = gb.buf;
    const int64_t *doc = db.buf;
    for (Py_ssize_t i = 0; i < gb.len / 8; i++) {
        if (doc[i] < 0 || doc[i] >= n_docs) {
            PyErr_SetString(PyExc_ValueError, "minhash_bins: a doc index is out of range");
            Py_CLEAR(out);
            goto done;
        }
        uint64_t h = mix64(sh[i] ^ seed_mix), v = h >> 4;
        uint64_t *slot = &bins[doc[i] * k + (Py_ssize_t)(((h >> 32) * (uint64_t)k) >> 32)];
        if (v < *slot) *slot = v;
    }
done:
    PyBuffer_Release(&gb);
    PyBuffer_Release(&db);
    return out;
}

/* ---- near-duplicate verification (pipelines/dedup/minhash_verify.py's numpy jaccard is the reference) ---- */

static PyObject *shared_counts(PyObject *self, PyObject *args) {
    Py_buffer vb, sb, lb, ab, bb;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &vb, &sb, &lb, &ab, &bb)) return NULL;
    PyObject *out = NULL;
    if (check_words(&vb, "values") < 0 || check_words(&sb, "start") < 0 || check_words(&lb, "length") < 0 ||
        check_words(&ab, "a") < 0 || check_words(&bb, "b") < 0) goto done;
    const uint64_t *v = vb.buf;
    const int64_t *start = sb.buf, *length = lb.buf, *a = ab.buf, *b = bb.buf;
    Py_ssize_t n_values = vb.len / 8, rows = sb.len / 8, pairs = ab.len / 8;
    if (lb.len != sb.len || bb.len != ab.len) {
        PyErr_SetString(PyExc_ValueError, "shared_counts: one length per start and one b per a");
        goto done;
    }
    for (Py_ssize_t i = 0; i < pairs; i++) {  /* every row a pair names lies inside the values */
        int64_t r[2] = {a[i], b[i]};
        for (int k = 0; k < 2; k++) {
            if (r[k] < 0 || r[k] >= rows || start[r[k]] < 0 || length[r[k]] < 0 ||
                start[r[k]] > n_values - length[r[k]]) {
                PyErr_Format(PyExc_ValueError, "shared_counts: pair %zd names row %lld, not a row inside the values",
                             i, (long long)r[k]);
                goto done;
            }
        }
    }
    out = PyBytes_FromStringAndSize(NULL, pairs * 8);
    if (!out) goto done;
    int64_t *shared = (int64_t *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < pairs; i++) {  /* both rows ascending and distinct: one merge */
        const uint64_t *x = v + start[a[i]], *xe = x + length[a[i]], *y = v + start[b[i]], *ye = y + length[b[i]];
        int64_t n = 0;
        while (x < xe && y < ye) {
            if (*x < *y) x++;
            else if (*y < *x) y++;
            else { n++; x++; y++; }
        }
        shared[i] = n;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&vb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&lb);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&bb);
    return out;
}

static int cmp_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *vocab_counts(PyObject *self, PyObject *args) {
    PyObject *capsule, *texts;
    Py_ssize_t head_chars, min_len;
    if (!PyArg_ParseTuple(args, "OO!nn", &capsule, &PyList_Type, &texts, &head_chars, &min_len)) return NULL;
    Vocabulary *v = PyCapsule_GetPointer(capsule, "mixture.vocabulary");
    if (!v) return NULL;
    Py_ssize_t n_texts = PyList_GET_SIZE(texts), n_pairs = 0, cap_pairs = 0;
    Columns c = {0};
    int64_t *indptr = PyMem_Calloc((size_t)n_texts + 1, 8), *indices = NULL, *counts = NULL;
    /* per column: the last text that held it and its count there; a text's distinct columns are then sorted */
    int64_t *seen = PyMem_Malloc((size_t)(v->n_columns + 1) * 8);
    int64_t *count_of = PyMem_Malloc((size_t)(v->n_columns + 1) * 8);
    PyObject *result = NULL;
    if (!indptr || !seen || !count_of) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t j = 0; j < v->n_columns; j++) seen[j] = -1;
    for (Py_ssize_t i = 0; i < n_texts; i++) {
        PyObject *obj = PyList_GET_ITEM(texts, i), *head, *text;
        if (check_str(obj) < 0) goto done;
        head = PyUnicode_GET_LENGTH(obj) > head_chars ? PyUnicode_Substring(obj, 0, head_chars) : Py_NewRef(obj);
        if (!head) goto done;
        int ascii = PyUnicode_IS_ASCII(head), rc;
        text = ascii ? Py_NewRef(head) : PyObject_CallMethod(head, "lower", NULL);  /* what text[:head].lower() is */
        Py_DECREF(head);
        if (!text) goto done;
        c.n_cols = 0;
        BY_KIND(rc, text, vocab_columns, PyUnicode_GET_LENGTH(text), min_len, ascii, &v->set, &c);
        Py_DECREF(text);
        if (rc < 0) goto done;
        Py_ssize_t distinct = 0;
        for (Py_ssize_t k = 0; k < c.n_cols; k++) {
            int64_t col = c.cols[k];
            if (seen[col] == i) {
                count_of[col]++;
                continue;
            }
            seen[col] = i;
            count_of[col] = 1;
            c.cols[distinct++] = col;  /* the distinct columns overwrite the list's head, which was read already */
        }
        qsort(c.cols, (size_t)distinct, 8, cmp_int64);
        Py_ssize_t cap = cap_pairs;
        if (grow((void **)&indices, &cap, n_pairs + distinct, 8) < 0 ||
            grow((void **)&counts, &cap_pairs, n_pairs + distinct, 8) < 0)
            goto done;
        for (Py_ssize_t k = 0; k < distinct; k++) {
            indices[n_pairs] = c.cols[k];
            counts[n_pairs++] = count_of[c.cols[k]];
        }
        indptr[i + 1] = n_pairs;
    }
    result = Py_BuildValue("(y#y#y#)", (const char *)indptr, (n_texts + 1) * 8, OR_EMPTY(indices), n_pairs * 8,
                           OR_EMPTY(counts), n_pairs * 8);
done:
    PyMem_Free(indptr);
    PyMem_Free(indices);
    PyMem_Free(counts);
    PyMem_Free(seen);
    PyMem_Free(count_of);
    PyMem_Free(c.cols);
    PyMem_Free(c.scratch);
    return result;
}

static PyMethodDef METHODS[] = {
    {"normalize_flags", normalize_flags, METH_O,
     "normalize_flags(text) -> (has '\\r', has a line space before a newline, has 4 newlines in a row)"},
    {"gate_counts", gate_counts, METH_VARARGS,
     "gate_counts(text, min_words, head) -> (fewer than min_words words, symbols in the head, head length, "
     "non-blank head lines, occurrences of head lines that repeat)"},
    {"content_type_counts", content_type_counts, METH_VARARGS,
     "content_type_counts(text, sample) -> (non-blank lines, agent turns, letters, markup lines, code lines, "
     "structured lines, math hits, at least 21 words, sentence ends, sample is ASCII)"},
    {"quality_counts", quality_counts, METH_VARARGS,
     "quality_counts(text, head) -> (non-blank stripped lines, long lines, repeated long lines, clause-ending "
     "lines, letters of the head)"},
    {"word_counts", word_counts, METH_O,
     "word_counts(lower-cased text) -> (words, their characters, stopwords, first words, distinct first words)"},
    {"word_hashes", word_hashes, METH_O,
     "word_hashes(texts) -> (uint64 hash of every word of each text lower-cased, int64 offsets of each text's words "
     "(texts + 1))"},
    {"term_counts", term_counts, METH_VARARGS,
     "term_counts(texts, min_len) -> (UTF-32LE code points of the distinct terms in order of first occurrence, "
     "their int64 byte offsets (terms + 1), then int64 arrays of (text, term, occurrences) pairs); terms are "
     "maximal runs of word characters that are all letters, at least min_len long, and the letter bigrams of "
     "scripts written without spaces (fit/embed.py)"},
    {"vocabulary", vocabulary, METH_VARARGS,
     "vocabulary(UTF-32LE terms back to back, int64 byte offsets, int64 columns) -> a capsule for vocab_counts"},
    {"vocab_counts", vocab_counts, METH_VARARGS,
     "vocab_counts(vocabulary, texts, head, min_len) -> int64 (row pointers (texts + 1), columns, counts) of the "
     "CSR counts of the term_counts tokens of text[:head].lower() over the vocabulary, columns ascending per row"},
    {"ngram_hashes", ngram_hashes, METH_VARARGS,
     "ngram_hashes(uint64 word hashes, int64 offsets of each text's words (texts + 1), n) -> (uint64 hash of every "
     "run of n consecutive words inside one text, int64 text of each), as WordHashes.ngrams"},
    {"minhash_bins", minhash_bins, METH_VARARGS,
     "minhash_bins(uint64 shingles, int64 doc of each, n_docs, k, seed mix) -> uint64 (n_docs, k): every bin's "
     "minimum before densification, as minhash_signatures (EMPTY where no shingle fell)"},
    {"shared_counts", shared_counts, METH_VARARGS,
     "shared_counts(uint64 values, int64 start, int64 length of each row, int64 a, int64 b) -> int64: for each "
     "pair, how many values rows a[i] and b[i] share (each row ascending and distinct)"},
    {"code_head", code_head, METH_O,
     "code_head(text[:HEAD]) -> (the head the scorer reads: comment lines cut to their marker, docstrings emptied; "
     "its non-blank lines, at least 1), as code_language.head_py"},
    {"code_tokens", code_tokens, METH_O,
     "code_tokens(head) -> ({line start token: count}, {token: count}), both in order of first occurrence: the "
     "two passes of code_language.tokens_py (the line starts it cuts away, then the tokens of the rest)"},
    {"set_stopwords", set_stopwords, METH_O, "set_stopwords('a about after ...'): the stopwords word_counts counts"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_signals", "Text signal counts at C speed (see mixture/text/kernel.py).", -1, METHODS,
    NULL, NULL, NULL, NULL};

/* bumped with every change of a function's arguments or results; mixture/text/kernel.py ignores another version */
#define KERNEL_VERSION 7

PyMODINIT_FUNC PyInit__signals(void) {
    init_tables();
    PyObject *m = PyModule_Create(&MODULE);
    if (m && PyModule_AddIntConstant(m, "VERSION", KERNEL_VERSION) < 0) Py_CLEAR(m);
    return m;
}
