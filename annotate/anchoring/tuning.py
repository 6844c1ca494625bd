"""Every tuning constant of anchoring, in one place: weights, thresholds and bounds.

Measured numbers come from benchmarks/anchoring.py (a generated 1 MB page) and notes in its
docstring; change one here and run that benchmark and tests/test_anchoring_properties.py.
"""

from __future__ import annotations

# -- Ranking candidates -------------------------------------------------------------------------

# As in hypothesis/client match-quote.ts: the quote's similarity dominates, the context decides
# between look-alikes, the distance from the old position breaks ties.
QUOTE_WEIGHT = 50.0
PREFIX_WEIGHT = 20.0
SUFFIX_WEIGHT = 20.0
TOTAL_WEIGHT = QUOTE_WEIGHT + PREFIX_WEIGHT + SUFFIX_WEIGHT
# Candidates scoring within this of the best are a tie, and the one nearest the old position wins.
# Copies of a boilerplate paragraph differ only in the far ends of their 32-character contexts:
# a fixed position weight (Hypothesis: 2 of 92) loses to that noise once positions have drifted.
TIE_MARGIN = 0.05
SAME_PLACE = 32  # candidates starting closer than this are one place, not a tie
# `locate_many` breaks such ties by how far the text moved around the quote, measured on the
# page's other quotes: those found without a tie that kept their order, if there are this many.
MIN_NEIGHBOURS = 3

# -- Accepting a candidate ----------------------------------------------------------------------

# A quote less similar than this (Levenshtein, whitespace collapsed) is not found. Measured on
# 1 MB: it rejects every deleted quote and loses no correct anchor (benchmarks/anchoring.py, its
# "deleted, anchored wrongly" row and the accuracy of each category).
MIN_QUOTE_SIMILARITY = 0.75
# ... unless the context on both sides still agrees this well: one word rewritten inside a quote
# of 30 characters leaves 0.6 of it (issue #13, class 3), and a deleted quote leaves no span
# between an intact prefix and suffix.
MIN_QUOTE_SIMILARITY_IN_CONTEXT = 0.6
CONTEXT_HOLDS = 0.85  # each side stored, for the lower threshold above
# An approximate match is the passage, edited, where its stored context frames it (issue #26,
# `framing.framing`): one side of the context whole next to it (a sentence revised in two or
# three places keeps its neighbours; a deleted quote's look-alike stands in other text: "If this
# setting is left empty, no tags …" for "… all tags …" on Material's docs). Farther than
# FRAMED_REACH characters from where the quote should start, its other side must not be like the
# stored one (MIN_CONTEXT_SIMILARITY, below CONTEXT_HOLDS) without being it: that is a sibling
# entry's sentence (an options reference repeats "Sets the … color of the header bar." under each
# entry's heading), while a moved passage's other side is other text, or the same with a word
# changed. A quote of SIBLING_MAX_QUOTE characters or more has no such twins: matched at
# MIN_SIMILARITY_ANY_EDIT or better, the CONTEXT_PROBE_LENGTH characters of one side next to it
# suffice (its neighbours' edits reach both sides' far ends, measured on benchmarks/anchoring.py).
MIN_SIMILARITY_ANY_EDIT = 0.85
FRAMED_REACH = 512
SIBLING_MAX_QUOTE = 320
# A match less similar than MIN_SIMILARITY_ANY_EDIT loses the words at its ends that make it less
# like the quote (`matching._trimmed`), for quotes up to this long (each try is a Levenshtein).
TRIM_MAX_QUOTE = 512
# Shorter quotes look like too many places to be matched approximately: exact hits next to a piece
# of their old context only.
MIN_FUZZY_LENGTH = 8
CONTEXT_PROBE_LENGTH = 8
# A quote shorter than this is only found where one side of its context still agrees ...
CONTEXT_REQUIRED_BELOW = 32
# ... unless it occurs exactly once and is at least this long: a unique occurrence is found
# whatever its context says, which only ranks several (issue #13, class 2: a paragraph inserted
# just above a quote rewrites its prefix).
MIN_UNIQUE_LENGTH = 16
# An approximate match of a quote shorter than this needs its context to hold on every side
# stored (CONTEXT_HOLDS): a look-alike of a short quote stands elsewhere too easily ("Made with
# Material for MkDocs" and "MkDocs, Material for MkDocs" are 0.76 alike; the sibling sentences of
# a settings list, "left empty, all tags and pages" and "left empty, no tags or pages", 0.8), and
# a deleted quote must anchor nowhere.
FUZZY_CONTEXT_REQUIRED_BELOW = 40
# An approximate match is refused when a side of the stored context (at least
# MIN_CONTEXT_EVIDENCE characters) still stands intact nearer the old position than the match,
# and frames no such match (within CONTEXT_FRAMES characters of its edge): the passage next to
# that side was deleted, and the match is a look-alike elsewhere (on Material's docs "… render
# all categories." deleted, its sibling "… render all authors." 30 lines above). Sides are looked
# for at most CONTEXT_EVIDENCE_REACH characters from the old position.
MIN_CONTEXT_EVIDENCE = 12
CONTEXT_FRAMES = 16
CONTEXT_EVIDENCE_REACH = 2000
# Measured on 1 MB: the context at the right place agrees >= 0.85 (99 %), at random places
# <= 0.55 (99 %), 0.62 (99.9 %).
MIN_CONTEXT_SIMILARITY = 0.65
# An exact hit whose context agrees this well (mean of both sides) is taken at once, with a full
# score; otherwise an edited copy in the right context may still beat it, and its score is the
# weighted one (context included).
GOOD_CONTEXT_SIMILARITY = 0.75
# Bounds the work for a quote that occurs very often.
MAX_EXACT_HITS = 1000

# -- Quotes in a Markdown source (`sourcemap.locate_in_markdown`) -------------------------------

# Exact occurrences are ranked with the weights above, TIE_MARGIN and the two context levels
# (GOOD_CONTEXT_SIMILARITY on average: a full score; MIN_CONTEXT_SIMILARITY on one side: it
# speaks for that copy), then the old place, then the page's count of occurrences.
# Unlike a quote re-anchored in the page it was taken from, a quote looked up in Markdown may not
# be there at all (theme text, macros). A short one (under FUZZY_CONTEXT_REQUIRED_BELOW) resembles
# unrelated text too easily ("Made with Material for MkDocs" vs "MkDocs, Material for MkDocs"
# scores 76), so its approximate matches need this score (0-100).
MIN_SHORT_QUOTE_SCORE = 85
# A quote of this many characters or more, found again with one word changed near where it was
# last seen (within ONE_WORD_NEAR characters), stays anchored whatever its similarity. Near is
# kept small: documentation repeats passages one word apart ("code copy buttons" / "code
# selection buttons"), and a deleted passage must not become its neighbour edited. An exact copy
# farther than ONE_WORD_REACH is a copy elsewhere, not the note's own passage.
MIN_ONE_WORD_QUOTE = 30
MIN_ONE_WORD_WORDS = 4  # ... and of at least this many words
ONE_WORD_NEAR = 300
ONE_WORD_REACH = 2000
# An approximate match of a short quote showing this many of its words in other letter case is
# other text (a heading in title case), not the quote edited.
CASE_DIFFERS = 2

# -- Approximate search -------------------------------------------------------------------------

# Candidate windows are voted for by the word pairs of prefix, quote and suffix that still occur
# in the text; pairs more frequent than MAX_POSTINGS say nothing about where.
MAX_QUERY_ANCHORS = 64
MAX_POSTINGS = 64
MAX_WINDOWS = 5
GUESS_VOTES = 3  # pairs whose median places each end of a window
MIN_WINDOW_VOTES = 0.25  # share of the best window's support a window needs to be looked at
WINDOW_SLACK = 16  # characters searched either side of a guessed end, plus a quarter of ...
MAX_WINDOW_SLACK = 256  # ... the distance to the word pair it was guessed from, up to this
HINT_WINDOW_MAX_QUOTE = 512  # longer quotes always leave anchors; no blind look at the old place
# A window whose guessed span is less similar than this is not refined. Measured on 1 MB: right
# windows score >= 0.8 before refinement, windows of unrelated text 0.23 (median).
MIN_ROUGH_SIMILARITY = 0.6
# The ends of a window are placed by matching this much of the context and of the quote's edges,
# each allowed this share of errors.
EDGE_LENGTH = 32
MAX_EDGE_ERRORS = 0.35

# -- Indexes ------------------------------------------------------------------------------------

# After this many partial scans of a text, index every word pair at once.
SCANS_BEFORE_FULL_INDEX = 2
# `locate` on a bare string keeps the indexes of the texts it saw last, so that a script
# re-anchoring quotes one at a time in one text builds its index once (issue #13, speed): at
# most this many texts, and this many characters in all. A complete index keeps ~20 bytes per
# character of text (tracemalloc, the 1 MB page of benchmarks/anchoring.py): 40 MB at most.
SHARED_INDEXES = 4
SHARED_INDEX_CHARS = 2_000_000
# Texts shorter than this are not kept: indexing them costs less than remembering them.
SHARED_INDEX_MIN_CHARS = 20_000

# A PageIndex keeps the postings it built while a new text only changes lines after the first
# one, up to this many (a page loaded again); the cache is bounded by this many keys (~25 per
# quote searched for in the whole text).
MAX_CHANGED_LINES = 64
MAX_CACHED_POSTINGS = 10_000
# Lines longer than this on average: a PageIndex uses a fresh TextIndex, which indexes such a
# text faster than the line index does when no line is reused.
LONG_LINE = 4096

# -- The anchor route's cache (`pagecache.Anchors`) ---------------------------------------------

CACHE_SIZE = 64  # answers; each entry is one small list
# Pages whose word-pair index is kept from one version of their text to the next (PageIndex):
# ~25 bytes per character of text, 3 MB for a 140 kB page.
INDEXED_PAGES = 16
