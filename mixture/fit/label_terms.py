"""Words a cluster label never holds: stop words of every language stopwordsiso lists and programming keywords."""

from __future__ import annotations

import keyword
import re
from functools import cache, lru_cache

# Reserved words and built-in type names of common languages besides Python (whose `keyword` module lists its own):
# C, C++, Java, C#, JavaScript/TypeScript, Go, Rust, shell, SQL and PHP, from their reference manuals. Only words of
# 3 letters or more matter (a label term has at least 3), and words an English text uses as often as code does
# (table, order, match, class) are left out unless a language reserves them: they would take topics from prose.
_CODE_KEYWORDS = {
    "C, C++": "auto bool break case char const constexpr continue decltype default delete double else enum explicit "
              "extern float for friend goto inline int long mutable namespace noexcept nullptr operator private "
              "protected public register return short signed sizeof static struct switch template this throw "
              "typedef typename union unsigned virtual void volatile while include ifdef ifndef endif define",
    "Java, C#": "abstract boolean byte catch extends final finally implements import instanceof interface native "
                "new null override package readonly sealed string super synchronized throws var",
    "JavaScript, TypeScript": "async await const export function let typeof undefined yield",
    "Go": "chan defer fallthrough func nil rune uint int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
          "float32 float64",
    "Rust": "impl mut pub self usize isize where",
    "shell": "elif esac then done declare local echo",
    "SQL": "select insert update delete values varchar",
    "PHP": "elseif endforeach endwhile foreach",
}
CODE_KEYWORDS = frozenset(w for words in _CODE_KEYWORDS.values() for w in words.split())


@cache
def stop_words() -> frozenset[str]:
    """Stop words of every language stopwordsiso lists (lower case)."""
    import stopwordsiso

    return frozenset(w.lower() for w in stopwordsiso.stopwords(stopwordsiso.langs()))


def code_keywords() -> frozenset[str]:
    """Python's keywords and soft keywords, and CODE_KEYWORDS."""
    return frozenset(w.lower() for w in (*keyword.kwlist, *keyword.softkwlist)) | CODE_KEYWORDS


_HIRAGANA = re.compile("[\u3040-\u309f]")


def _grammatical(term: str) -> bool:
    """A term of Japanese kana that holds hiragana: an ending or particle (され, する), never a topic."""
    return _HIRAGANA.search(term) is not None


@cache
def banned() -> frozenset[str]:
    return stop_words() | code_keywords()


def allowed(term: str) -> bool:
    """May a label hold `term` (a word, or a phrase of words)? No word of it is a stop word in any language or a
    programming keyword, and it is not grammatical kana."""
    words = term.lower().split()
    return bool(words) and all(map(word_allowed, words))


@lru_cache(maxsize=1 << 16)
def word_allowed(word: str) -> bool:
    """May a label hold the one lower-case `word` (see allowed)?"""
    return word not in banned() and not _grammatical(word)
