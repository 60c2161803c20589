"""The example inputs the app offers, in one place: app.py shows them and `scripts.release` lists the shipped
models' answers to them in the model cards. No Gradio import, so training code can use it."""

# (text, top-k)
FILL_MASK_EXAMPLES = [
    ("Paris is the capital of <mask>.", 5),
    ("The <mask> barked at the mailman.", 5),
    ("This movie was <mask>.", 5),
    ("He was born in <mask> in 1950.", 5),
    ("The <mask> sat on the <mask> all day.", 3),
]

# A review of about 200 tokens, written for this project, that starts badly and ends well: longer than the 128
# tokens the model reads at once, so the tab reads it in overlapping windows (its first window alone is unsure)
LONG_REVIEW = (
    "I went in expecting very little. The trailer made it look like yet another loud summer sequel, the first "
    "twenty minutes drag with clumsy exposition, and a subplot about the brother's restaurant goes nowhere. I "
    "checked my watch more than once and wondered why I had bought a ticket. Then something changed. Once the two "
    "sisters are finally alone on the road, the film finds its voice: the dialogue is sharp and often very funny, "
    "the long silences say more than the speeches, and the lead gives a warm, honest performance that never begs "
    "for sympathy. The photography of the empty coast is beautiful, the music is used sparingly, and the last "
    "half hour builds to an ending that is moving without being sentimental. By the final scene half the audience "
    "was in tears, and so was I. It is not perfect, and the opening really should have been cut, but it is one of "
    "the most touching and rewarding films I have seen this year. Do not give up on it early.")

SENTIMENT_EXAMPLES = [
    "A gorgeous, funny and deeply moving film.",
    "A dull, lifeless and painfully slow mess.",
    "The acting was not bad at all.",
    "The visuals are stunning, but the story is a boring mess.",
    LONG_REVIEW,
]

# What a person expects, for the notes that say which examples the shipped models get wrong (checked at
# start-up, never assumed): the word a mask should get, the label a sentence should get.
FILL_MASK_EXPECTED = {
    "Paris is the capital of <mask>.": "France",
    "The <mask> barked at the mailman.": "dog",
}

SENTIMENT_EXPECTED = {
    "A gorgeous, funny and deeply moving film.": "positive",
    "A dull, lifeless and painfully slow mess.": "negative",
    "The acting was not bad at all.": "positive",
    LONG_REVIEW: "positive",
}

# The attention tab's default text, and the pronoun and noun whose link its hint looks for
ATTENTION_TEXT = "The cat sat on the mat because it was tired."
ATTENTION_LINK = ("it", "cat")


def example_label(text: str, longest: int = 80) -> str:
    """What an example shows: its text, or for a long one its opening words and its length in words."""
    if len(text) <= longest:
        return text
    return f"A long review ({len(text.split())} words): “{text[:longest // 2].rsplit(' ', 1)[0]} …”"

# The tokens tab: a default text with a common word, a rare word in pieces and a number, then texts that show
# what byte-level BPE does with other scripts, emoji, code and misspellings
TOKENS_TEXT = "Tokenization splits unbelievably rare words, like antidisestablishmentarianism, into 2024 pieces."
TOKENS_EXAMPLES = [
    TOKENS_TEXT,
    "The café serves crème brûlée 🍮 in Zürich.",
    "東京は日本の首都です。",
    "def tokenize(text): return text.split()",
    "Ths sentnce has sevral speling misteaks.",
]

# The embeddings tab's word map: groups a model that learned anything keeps apart (weekdays, numbers, countries,
# animals, colours). Each word is one token to the shipped model (" Tuesday" is three pieces there) and none is
# as frequent, and so as odd, as "one" or "two", which alone would take the first two components.
MAP_WORDS = ("Monday, Wednesday, Friday, Sunday, five, six, seven, eight, France, Germany, Japan, Italy, "
             "dog, cat, horse, bird, red, blue, green, yellow")

# The embeddings tab: words whose neighbours it offers (the first shown at start), and analogies (a is to b as c
# is to ?; the first shown at start): each a question of ANALOGY_PROBE below that the shipped model answers first
# (tests/test_embedding_view.py checks it): gender, capitals, comparatives, a past tense. Monday : Tuesday :: Friday
# was one and answered "cymbals": " Tuesday" is three pieces to the shipped tokenizer (␣T ues day), whose mean is no
# weekday (its nearest words: Bahamians, Pulse, cymbals).
NEIGHBOURS_WORDS = ["Monday", "good", "France", "seven", "red"]
ANALOGIES = [
    ("man", "king", "woman"),
    ("Paris", "France", "Berlin"),
    ("France", "Paris", "Japan"),
    ("good", "better", "bad"),
    ("big", "bigger", "small"),
    ("he", "she", "his"),
    ("take", "took", "write"),
]

# The analogy probe (`scripts.analogy_probe`, and the Embeddings tab's note on the shipped model): questions
# "a is to b as c is to ?" with the expected answer, each word one token to the shipped tokenizer, as
# (category, a, b, c, expected)
ANALOGY_PROBE = [
    ("capital", "Paris", "France", "Berlin", "Germany"),
    ("capital", "Paris", "France", "Rome", "Italy"),
    ("capital", "Berlin", "Germany", "Madrid", "Spain"),
    ("capital", "Rome", "Italy", "Tokyo", "Japan"),
    ("capital", "Madrid", "Spain", "Moscow", "Russia"),
    ("capital", "Tokyo", "Japan", "Athens", "Greece"),
    ("capital", "Moscow", "Russia", "Cairo", "Egypt"),
    ("capital", "Athens", "Greece", "Beijing", "China"),
    ("capital", "Cairo", "Egypt", "Ottawa", "Canada"),
    ("capital", "Beijing", "China", "Vienna", "Austria"),
    ("capital", "France", "Paris", "Japan", "Tokyo"),
    ("capital", "Germany", "Berlin", "Italy", "Rome"),
    ("nationality", "France", "French", "Germany", "German"),
    ("nationality", "Germany", "German", "Italy", "Italian"),
    ("nationality", "Italy", "Italian", "Spain", "Spanish"),
    ("nationality", "Spain", "Spanish", "Japan", "Japanese"),
    ("nationality", "Japan", "Japanese", "Russia", "Russian"),
    ("nationality", "Russia", "Russian", "Greece", "Greek"),
    ("nationality", "Greece", "Greek", "China", "Chinese"),
    ("nationality", "China", "Chinese", "Poland", "Polish"),
    ("comparative", "good", "better", "bad", "worse"),
    ("comparative", "big", "bigger", "small", "smaller"),
    ("comparative", "fast", "faster", "slow", "slower"),
    ("comparative", "long", "longer", "short", "shorter"),
    ("comparative", "old", "older", "young", "younger"),
    ("comparative", "strong", "stronger", "weak", "weaker"),
    ("comparative", "high", "higher", "low", "lower"),
    ("gender", "man", "woman", "king", "queen"),
    ("gender", "man", "king", "woman", "queen"),
    ("gender", "boy", "girl", "father", "mother"),
    ("gender", "he", "she", "his", "her"),
    ("gender", "father", "mother", "son", "daughter"),
    ("gender", "brother", "sister", "husband", "wife"),
    ("gender", "uncle", "aunt", "prince", "princess"),
    ("plural", "cat", "cats", "dog", "dogs"),
    ("plural", "car", "cars", "house", "houses"),
    ("plural", "city", "cities", "year", "years"),
    ("plural", "dog", "dogs", "child", "children"),
    ("past", "walk", "walked", "play", "played"),
    ("past", "go", "went", "see", "saw"),
    ("past", "take", "took", "write", "wrote"),
    ("past", "run", "ran", "come", "came"),
    ("past", "give", "gave", "know", "knew"),
]
