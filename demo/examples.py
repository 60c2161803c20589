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

SENTIMENT_EXAMPLES = [
    "A gorgeous, funny and deeply moving film.",
    "A dull, lifeless and painfully slow mess.",
    "The acting was not bad at all.",
    "The visuals are stunning, but the story is a boring mess.",
]

# What a person expects, for the notes that say which examples the shipped models get wrong (checked at
# start-up, never assumed): the word a mask should get, the label a sentence should get.
FILL_MASK_EXPECTED = {
    "Paris is the capital of <mask>.": "France",
}

SENTIMENT_EXPECTED = {
    "A gorgeous, funny and deeply moving film.": "positive",
    "A dull, lifeless and painfully slow mess.": "negative",
    "The acting was not bad at all.": "positive",
}

# The attention tab's default text, and the pronoun and noun whose link its hint looks for
ATTENTION_TEXT = "The cat sat on the mat because it was tired."
ATTENTION_LINK = ("it", "cat")
