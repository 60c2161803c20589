"""The example inputs the app offers, in one place: app.py shows them and `train.release` lists the shipped
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
