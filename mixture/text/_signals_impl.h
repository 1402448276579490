/* The counting functions of _signals.c for one str kind: included once per kind with CH (its character type) and
 * F(name) (a per-kind name) defined. Indexes count characters, as Python's str does. */

static inline int F(starts)(const CH *s, Py_ssize_t i, Py_ssize_t end, const char *lit) {
    for (; *lit; lit++, i++)
        if (i >= end || s[i] != (CH)(unsigned char)*lit) return 0;
    return 1;
}

static inline Py_ssize_t F(skip_space)(const CH *s, Py_ssize_t i, Py_ssize_t end) {
    while (i < end && IS_SPACE(s[i])) i++;
    return i;
}

/* index of the last non-space character in [from, end), or -1 */
static inline Py_ssize_t F(last_nonspace)(const CH *s, Py_ssize_t from, Py_ssize_t end) {
    for (Py_ssize_t i = end - 1; i >= from; i--)
        if (!IS_SPACE(s[i])) return i;
    return -1;
}

/* the line [a, b) stripped as str.strip() does; returns 0 when nothing is left */
static inline int F(strip_span)(const CH *s, Py_ssize_t *a, Py_ssize_t *b) {
    while (*a < *b && IS_SPACE(s[*a])) (*a)++;
    while (*b > *a && IS_SPACE(s[*b - 1])) (*b)--;
    return *b > *a;
}

static inline Py_ssize_t F(line_end)(const CH *s, Py_ssize_t i, Py_ssize_t end) {
    if (sizeof(CH) == 1) {
        const CH *p = memchr(s + i, '\n', (size_t)(end - i));
        return p ? p - s : end;
    }
    while (i < end && s[i] != '\n') i++;
    return i;
}

/* whitespace-separated words in [0, end); counting stops at `cap` */
static Py_ssize_t F(count_words)(const CH *s, Py_ssize_t end, Py_ssize_t cap) {
    Py_ssize_t n = 0;
    int in_word = 0;
    for (Py_ssize_t i = 0; i < end && n < cap; i++) {
        int sp = IS_SPACE(s[i]);
        n += !sp && !in_word;
        in_word = !sp;
    }
    return n;
}

/* the word gate's words in [0, end), counting stops at `cap`: every letter of a script written without spaces
 * (in_unspaced_script) is a word, its other characters (marks, punctuation) separate; elsewhere a word is a run of
 * characters between whitespace */
static Py_ssize_t F(count_gate_words)(const CH *s, Py_ssize_t end, Py_ssize_t cap) {
    if (sizeof(CH) == 1) return F(count_words)(s, end, cap);
    Py_ssize_t n = 0;
    int in_word = 0;
    for (Py_ssize_t i = 0; i < end && n < cap; i++) {
        Py_UCS4 c = s[i];
        if (IS_SPACE(c)) {
            in_word = 0;
        } else if (in_unspaced_script(c)) {
            n += Py_UNICODE_ISALPHA(c) != 0;
            in_word = 0;
        } else {
            n += !in_word;
            in_word = 1;
        }
    }
    return n;
}

static void F(normalize_flags)(const CH *s, Py_ssize_t len, int *cr, int *trailing, int *blank4) {
    Py_ssize_t newlines = 0;
    Py_UCS4 prev = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = s[i];
        if (c == '\n') {
            if (prev == ' ' || prev == '\t' || prev == '\f' || prev == '\v' || prev == 0xA0) *trailing = 1;
            if (++newlines >= 4) *blank4 = 1;
        } else {
            newlines = 0;
            if (c == '\r') *cr = 1;
        }
        prev = c;
    }
}

/* ---- gates ---------------------------------------------------------------------------------------------- */

static int F(gate_counts)(const CH *s, Py_ssize_t len, Py_ssize_t min_words, Py_ssize_t head, GateCounts *out) {
    out->few_words = F(count_gate_words)(s, len, min_words) < min_words;
    for (Py_ssize_t i = 0; i < head; i++) {
        CH c = s[i];
        out->symbols += c != ' ' && c != '\t' && c != '\n' && !IS_ALNUM(c);
    }
    SpanSet lines;  /* lines of the head whose strip() is not empty, compared unstripped */
    if (spanset_init(&lines, s, sizeof(CH), 256) < 0) return -1;
    for (Py_ssize_t a = 0; a <= head;) {
        Py_ssize_t e = F(line_end)(s, a, head), x = a, y = e;
        if (F(strip_span)(s, &x, &y)) {
            out->lines++;
            if (spanset_add(&lines, a, e - a) < 0) {
                spanset_free(&lines);
                return -1;
            }
        }
        a = e + 1;
    }
    for (size_t i = 0; i < lines.cap; i++)
        if (lines.slots[i].count > 1) out->repeated += lines.slots[i].count;
    spanset_free(&lines);
    return 0;
}

/* ---- content type ------------------------------------------------------------------------------------- */

/* _AGENT_TURN at the line starting at a: a name, any whitespace (newlines too), then ':' */
static inline int F(agent_line)(const CH *s, Py_ssize_t a, Py_ssize_t end) {
    if (a >= end) return 0;
    for (const char **name = AGENT_NAMES; *name; name++) {
        if ((CH)**name == s[a] && F(starts)(s, a, end, *name)) {
            Py_ssize_t k = F(skip_space)(s, a + (Py_ssize_t)strlen(*name), end);
            return k < end && s[k] == ':';
        }
    }
    return 0;
}

/* keyword + `\b`: the keyword is followed by a non-word character or by the end of the sample */
static inline int F(word_kw)(const CH *s, Py_ssize_t p, Py_ssize_t e, Py_ssize_t end, const char *kw) {
    Py_ssize_t n = (Py_ssize_t)strlen(kw);
    return F(starts)(s, p, e, kw) && (p + n >= end || !IS_WORD(s[p + n]));
}

/* keyword + `.*:[^\S\n]*$`: the line's last non-space character is a ':' after the keyword */
static inline int F(block_kw)(const CH *s, Py_ssize_t p, Py_ssize_t e, const char *kw) {
    if (!F(starts)(s, p, e, kw)) return 0;
    Py_ssize_t last = F(last_nonspace)(s, p + (Py_ssize_t)strlen(kw), e);
    return last >= 0 && s[last] == ':';
}

/* _CODE_LINE for the line whose content starts at p (after its indentation) and ends at e */
static int F(code_line)(const CH *s, Py_ssize_t p, Py_ssize_t e, Py_ssize_t end) {
    if (p >= e) return 0;
    CH c = s[p];
    for (const char **lit = CODE_PREFIXES; *lit; lit++)
        if ((CH)**lit == c && F(starts)(s, p, e, *lit)) return 1;
    if (c == '$' && p + 1 < e && (IS_ASCII_ALPHA(s[p + 1]) || s[p + 1] == '_' || s[p + 1] == '{')) return 1;
    Py_ssize_t last = F(last_nonspace)(s, p, e);  /* >= p: the line is not blank */
    if (s[last] == '{' || s[last] == ';') return 1;
    for (const char **kw = CODE_LINES; *kw; kw++)
        if ((CH)**kw == c && last - p + 1 == (Py_ssize_t)strlen(*kw) && F(starts)(s, p, e, *kw)) return 1;
    switch (c) {
    case 'f':
        if (F(starts)(s, p, e, "from ")) {
            Py_ssize_t q = p + 5, r = q;
            while (r < e && !IS_SPACE(s[r])) r++;
            if (r > q && F(starts)(s, r, e, " import ")) return 1;
        }
        if (F(word_kw)(s, p, e, end, "function") || F(block_kw)(s, p, e, "for ")) return 1;
        break;
    case 'r':
        if (F(word_kw)(s, p, e, end, "return")) return 1;
        break;
    case 'e':
        if (F(word_kw)(s, p, e, end, "except")) return 1;
        break;
    case 'i':
        if (F(block_kw)(s, p, e, "if ")) return 1;
        break;
    case 'w':
        if (F(block_kw)(s, p, e, "while ") || F(block_kw)(s, p, e, "with ")) return 1;
        break;
    case '@':
        return p + 1 < e && IS_WORD(s[p + 1]);
    }
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_') {
        Py_ssize_t j = p + 1;
        while (j < e && (IS_WORD(s[j]) || s[j] == '.')) j++;
        Py_ssize_t k = F(skip_space)(s, j, e);  /* name = value */
        if (k < e && s[k] == '=' && F(skip_space)(s, k + 1, e) < e) return 1;
        if (k + 1 < e && s[k] == ':' && s[k + 1] == '=' && F(skip_space)(s, k + 2, e) < e) return 1;  /* := */
        if (j < e && s[j] == '(') {  /* call(...) */
            Py_ssize_t last = F(last_nonspace)(s, j + 1, e);
            if (last >= 0 && s[last] == ')') return 1;
        }
    }
    return 0;
}

/* _MARKUP_LINE: the line's content opens with a tag (`<` and a letter, `/`, `!` or `?`) or a LaTeX command */
static int F(markup_line)(const CH *s, Py_ssize_t p, Py_ssize_t e) {
    if (p + 1 >= e) return 0;
    CH c = s[p], d = s[p + 1];
    return (c == '<' && (IS_ASCII_ALPHA(d) || d == '/' || d == '!' || d == '?')) || (c == '\\' && IS_ASCII_ALPHA(d));
}

/* _STRUCT_LINE for the line whose content starts at p and ends at e */
static int F(struct_line)(const CH *s, Py_ssize_t p, Py_ssize_t e) {
    if (p >= e) return 0;
    CH c = s[p];
    if (c == '[' || c == ']' || c == '{' || c == '}' || c == ',') return 1;
    if (c == '"') {
        Py_ssize_t j = p + 1;
        while (j < e && s[j] != '"') j++;
        if (j < e) {
            Py_ssize_t k = F(skip_space)(s, j + 1, e);
            if (k < e && s[k] == ':') return 1;
        }
    }
    Py_ssize_t j = p;
    while (j < e && (IS_WORD(s[j]) || s[j] == '.' || s[j] == '-')) j++;
    if (j > p) {
        Py_ssize_t k = F(skip_space)(s, j, e);
        if (k < e && (s[k] == ':' || s[k] == '=') && F(skip_space)(s, k + 1, e) < e) return 1;
    }
    int commas = 0;
    for (Py_ssize_t i = j; i < e; i++)  /* the run before j holds no comma */
        if (s[i] == ',' && ++commas >= 3) return 1;
    if (c == '|')
        for (Py_ssize_t i = p + 1; i < e; i++)
            if (s[i] == '|') return 1;
    return 0;
}

/* non-overlapping matches of _MATH in [0, end) */
static Py_ssize_t F(math_hits)(const CH *s, Py_ssize_t end) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < end;) {
        CH c = s[i];
        if (c == '\\') {
            const char **cmd;
            for (cmd = MATH_COMMANDS; *cmd; cmd++)
                if (F(starts)(s, i + 1, end, *cmd)) break;
            if (*cmd) {
                n++;
                i += 1 + (Py_ssize_t)strlen(*cmd);
                continue;
            }
        } else if (c == '$') {
            Py_ssize_t j = i + 1;
            while (j < end && j - i - 1 <= 80 && s[j] != '$' && s[j] != '\n') j++;
            int before_name = j + 1 < end && (IS_WORD(s[j + 1]) || s[j + 1] == '{' || s[j + 1] == '(');
            if (j < end && s[j] == '$' && j - i - 1 >= 1 && j - i - 1 <= 80 && !before_name) {
                n++;
                i = j + 1;
                continue;
            }
        } else if ((c == '^' || c == '_') && i + 1 < end && s[i + 1] == '{') {
            n++;
            i += 2;
            continue;
        } else if ((Py_UCS4)c == 0x2211 || (Py_UCS4)c == 0x222B || (Py_UCS4)c == 0x221A || (Py_UCS4)c == 0x2264 ||
                   (Py_UCS4)c == 0x2265) {
            n++;
        } else if (c == 0xB1) {
            n++;
        }
        i++;
    }
    return n;
}

static void F(content_type_counts)(const CH *s, Py_ssize_t end, TypeCounts *out) {
    for (Py_ssize_t a = 0; a <= end;) {
        Py_ssize_t e = F(line_end)(s, a, end), x = a, y = e;
        out->lines += F(strip_span)(s, &x, &y);
        out->agent += F(agent_line)(s, a, end);
        Py_ssize_t p = F(skip_space)(s, a, e);
        out->markup += F(markup_line)(s, p, e);
        out->code += F(code_line)(s, p, e, end);
        out->structured += F(struct_line)(s, p, e);
        a = e + 1;
    }
    int ascii = 1;
    for (Py_ssize_t i = 0; i < end; i++) {
        CH c = s[i];
        if (c >= 128) {
            ascii = 0;
            out->letters += IS_LETTER(c) != 0;
        } else {
            out->letters += LETTER[c];
            if (c == '.' || c == '?' || c == '!') {
                CH next = i + 1 < end ? s[i + 1] : 0;
                out->sentences += next == ' ' || (c == '.' && next == '\n');
            }
        }
    }
    out->ascii = ascii;
    out->math = F(math_hits)(s, end);
    out->many_words = F(count_words)(s, end, 21) >= 21;
}

static inline int F(in_word)(CH c) { return c < 128 ? LETTER[c] : !IS_SPACE(c); }

/* ---- quality -------------------------------------------------------------------------------------------- */

static int F(quality_counts)(const CH *s, Py_ssize_t len, Py_ssize_t head_chars, QualityCounts *out) {
    SpanSet lines;  /* stripped non-empty lines of the whole text */
    if (spanset_init(&lines, s, sizeof(CH), 256) < 0) return -1;
    for (Py_ssize_t a = 0; a <= len;) {
        Py_ssize_t e = F(line_end)(s, a, len), x = a, y = e;
        if (F(strip_span)(s, &x, &y)) {
            out->lines++;
            CH last = s[y - 1];
            out->clause_end += last == '.' || last == '!' || last == '?' || last == ':' || last == ';' ||
                               last == ')' || last == '"' || last == '\'' || last == '`';
            if (spanset_add(&lines, x, y - x) < 0) {
                spanset_free(&lines);
                return -1;
            }
        }
        a = e + 1;
    }
    for (size_t i = 0; i < lines.cap; i++) {
        Slot *x = &lines.slots[i];
        if (x->count && x->len >= 30) {
            out->long_lines += x->count;
            out->repeated_long += x->count > 1 ? x->count : 0;
        }
    }
    spanset_free(&lines);
    Py_ssize_t head = len < head_chars ? len : head_chars;
    for (Py_ssize_t i = 0; i < head; i++) out->letters += IS_LETTER(s[i]);
    return 0;
}

/* words of lower-cased text as `lower_words` splits them: runs of ASCII letters and non-ASCII non-space characters */
static int F(word_counts)(const CH *s, Py_ssize_t len, WordCounts *out) {
    SpanSet first;
    if (spanset_init(&first, s, sizeof(CH), FIRST_WORDS) < 0) return -1;
    for (Py_ssize_t i = 0; i < len;) {
        if (!F(in_word)(s[i])) {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        int ascii = 1;
        for (; j < len && F(in_word)(s[j]); j++) ascii &= s[j] < 128;
        out->words++;
        out->chars += j - i;
        if (ascii && j - i <= 32) {
            char word[32];
            for (Py_ssize_t k = i; k < j; k++) word[k - i] = (char)s[k];
            out->stopwords += is_stopword(word, j - i);
        }
        if (out->first_words < FIRST_WORDS) {
            out->first_words++;
            if (spanset_add(&first, i, j - i) < 0) {
                spanset_free(&first);
                return -1;
            }
        }
        i = j;
    }
    out->first_distinct = (Py_ssize_t)first.used;
    spanset_free(&first);
    return 0;
}

/* ---- word hashes for MinHash and decontamination ------------------------------------------------------- */

/* Appends the hash of every word of one text, ASCII or already lower-cased (ASCII_WORD lower-cases ASCII letters):
 * a word is a maximal run of word characters, as UTF-8 with ASCII digits read as '0' (the bytes `simplified_bytes`
 * gives it), hashed as `_hash_words` does. */
static int F(word_hashes)(const CH *s, Py_ssize_t len, Hashes *out) {
    for (Py_ssize_t i = 0; i < len;) {
        Py_UCS4 c = s[i];
        if (c < 128 ? ASCII_WORD[c] == ' ' : !IS_WORD(c)) {
            i++;
            continue;
        }
        Py_ssize_t n = 0;
        for (; i < len; i++) {
            c = s[i];
            if (n + 4 > out->cap_scratch && hashes_scratch(out, n + 4) < 0) return -1;
            unsigned char *o = out->scratch + n;
            if (c < 128) {
                if (ASCII_WORD[c] == ' ') break;
                *o = ASCII_WORD[c];
                n++;
            } else if (!IS_WORD(c)) {
                break;
            } else {
                n += utf8(c, o);
            }
        }
        if (hashes_append(out, word_hash(out->scratch, (size_t)n)) < 0) return -1;
    }
    return 0;
}

/* ---- embedder term counts -------------------------------------------------------------------------------- */

/* The start of the next token at or after *i, its length in *n, *i moved past it (past the first character of a
 * bigram, where the next bigram starts); -1 when there is none. Tokens (fit/embed.py, `terms_of`): a maximal run of
 * word characters that are not letters of a script written without spaces (UNSPACED_LETTER), all letters and at
 * least min_len long; and in each maximal run of UNSPACED_LETTERs every two adjacent letters (a bigram), or the
 * letter itself when the run is one letter long. */
static inline Py_ssize_t F(next_term)(const CH *s, Py_ssize_t len, Py_ssize_t min_len, Py_ssize_t *i,
                                      Py_ssize_t *n) {
    while (*i < len) {
        Py_UCS4 c = s[*i];
        if (!IS_WORD(c)) {
            (*i)++;
            continue;
        }
        Py_ssize_t start = (*i)++;
        if (UNSPACED_LETTER(c)) {
            if (*i < len && UNSPACED_LETTER(s[*i])) {
                *n = 2;
                return start;
            }
            if (start == 0 || !UNSPACED_LETTER(s[start - 1])) {  /* a run of one letter */
                *n = 1;
                return start;
            }
            continue;  /* the last letter of a longer run: its bigram was the last token */
        }
        int letters = IS_LETTER(c) != 0;
        for (; *i < len && IS_WORD(s[*i]) && !UNSPACED_LETTER(s[*i]); (*i)++) letters &= IS_LETTER(s[*i]) != 0;
        if (letters && *i - start >= min_len) {
            *n = *i - start;
            return start;
        }
    }
    return -1;
}

/* Counts the tokens of one text (row) into the table. */
static int F(term_counts)(const CH *s, Py_ssize_t len, Py_ssize_t min_len, int64_t row, Terms *out) {
    Py_ssize_t n;
    for (Py_ssize_t j = 0, i; (i = F(next_term)(s, len, min_len, &j, &n)) >= 0;) {
        if (terms_scratch(out, n) < 0) return -1;
        for (Py_ssize_t k = 0; k < n; k++) out->scratch[k] = (uint32_t)s[i + k];
        if (terms_count(out, n, row) < 0) return -1;
    }
    return 0;
}

/* Appends the vocabulary column of every token of one text to out->cols: the tokens `term_counts` counts, ASCII
 * upper-case letters read as lower-case when `lower` (only for an ASCII text, where that is str.lower());
 * a token outside the vocabulary is skipped. */
static int F(vocab_columns)(const CH *s, Py_ssize_t len, Py_ssize_t min_len, int lower, const SpanSet *vocab,
                            Columns *out) {
    Py_ssize_t n;
    for (Py_ssize_t j = 0, i; (i = F(next_term)(s, len, min_len, &j, &n)) >= 0;) {
        if (grow((void **)&out->scratch, &out->cap_scratch, n, 4) < 0) return -1;
        for (Py_ssize_t k = 0; k < n; k++) {
            uint32_t c = (uint32_t)s[i + k];
            out->scratch[k] = lower && c >= 'A' && c <= 'Z' ? c + 32 : c;
        }
        const char *p = (const char *)out->scratch;
        Slot *x = spanset_find(vocab, p, n, hash_bytes((const unsigned char *)p, (size_t)n * 4));
        if (x->count) {
            if (grow((void **)&out->cols, &out->cap_cols, out->n_cols + 1, 8) < 0) return -1;
            out->cols[out->n_cols++] = x->count - 1;
        }
    }
    return 0;
}
