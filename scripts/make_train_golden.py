#!/usr/bin/env python3
"""The scikit-learn reference for teaching a classifier (tests/golden/train.json and
tests/golden/train_features.safetensors).

    /work/pyenv/bin/python scripts/make_train_golden.py

Features: all-MiniLM-L6-v2 (models/minilm) in PyTorch f32, last hidden state mean-pooled over
the attention mask and L2-normalised (sentence-transformers' embedding, what webert's
feature-extraction returns with pooling 'mean', normalize true). Model: scikit-learn
LogisticRegression(C, lbfgs, tol=1e-10, max_iter=100000) on those features as float64.
Each case is also fitted with newton-cg as a check that lbfgs converged.

Pinned: scikit-learn 1.9.1 (scipy 1.17.1), torch 2.15.0, transformers 5.24.0, safetensors
0.8.0, numpy 2.4.6. In scikit-learn 1.9 two classes get one logistic coefficient vector
(coef_ [1, d]) and three or more a multinomial softmax (coef_ [K, d]); `penalty` is
deprecated there, so the L2 penalty is asked for as l1_ratio=0 (the same objective).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
from pathlib import Path

import numpy as np
import scipy
import safetensors
import sklearn
import torch
import transformers
from safetensors.numpy import save_file
from sklearn.linear_model import LogisticRegression
from transformers import AutoModel, AutoTokenizer

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "golden"

# Labels sort by code point ('Finance' first), as sklearn's classes_ and webert's labels do.
TOPICS = {
    "sports": [
        "The striker scored twice in the second half.",
        "Our team won the championship after extra time.",
        "She ran the marathon in under three hours.",
        "The referee showed a red card to the defender.",
        "Tennis fans packed the stadium for the final.",
        "He broke the world record in the 100 metres.",
        "The coach changed the line-up before the derby.",
        "Cyclists climbed the mountain stage in heavy rain.",
        "The goalkeeper saved a penalty in the last minute.",
        "Le Tour de France s'est terminé à Paris dimanche.",
    ],
    "cooking": [
        "Simmer the tomato sauce for twenty minutes.",
        "Knead the dough until it is smooth and elastic.",
        "Add a pinch of salt and a spoon of olive oil.",
        "Roast the vegetables at 200 degrees until golden.",
        "Whisk the eggs with sugar for the sponge cake.",
        "This curry needs fresh coriander and ginger.",
        "Let the bread rise overnight in the fridge.",
        "Fry the onions slowly until they caramelise.",
        "Serve the soup hot with a slice of sourdough.",
        "Marinate the tofu in soy sauce and garlic 🍜.",
    ],
    "technology": [
        "The new phone has a faster processor and more memory.",
        "Update your browser to fix the security flaw.",
        "The laptop's battery lasts fourteen hours.",
        "Engineers released a new version of the compiler.",
        "The graphics card renders games at 120 frames per second.",
        "Cloud servers went down after a software bug.",
        "This app syncs your notes across all devices.",
        "The robot vacuum maps every room of the house.",
        "A new chip design cuts power use by half.",
        "WebGPU brings compute shaders to the browser.",
    ],
    "Finance": [
        "The central bank raised interest rates again.",
        "Shares fell sharply after the earnings report.",
        "Investors moved their savings into government bonds.",
        "The company's quarterly revenue beat expectations.",
        "Inflation eroded the value of pensions this year.",
        "The euro weakened against the dollar on Monday.",
        "Mortgage payments rose for millions of households.",
        "The startup raised fifty million in venture funding.",
        "Analysts expect a recession next spring.",
        "Die Börse schloss am Freitag mit leichten Gewinnen.",
    ],
}
TOPIC_HELD_OUT = [
    "The midfielder signed a new contract with the club.",
    "Chop the garlic finely and fry it in butter.",
    "The software update improves battery life.",
    "Stock markets rallied after the jobs report.",
    "Fans cheered as the runner crossed the finish line.",
    "Bake the cake for forty minutes at 180 degrees.",
    "A bug in the operating system crashed the servers.",
    "The bank cut its growth forecast for next year.",
    "They watched the match while eating pizza.",
    "The chip maker's shares doubled this year.",
    "",
    "Ünïcödé 😀 text with no clear topic at all.",
]

SENTIMENT = {
    "positive": [
        "I loved this film, the acting was wonderful.",
        "Great service and friendly staff, highly recommended.",
        "The best pizza I have had in years.",
        "What a delightful little book, I read it twice.",
        "Fantastic value, it works perfectly.",
        "The hotel room was spotless and the view stunning.",
        "Absolutely brilliant concert, I'd go again tomorrow.",
        "Such a helpful answer, thank you so much! 🙏",
        "The new update made the app so much faster.",
        "A warm, funny and moving story.",
        "Our guide was knowledgeable and kind.",
        "Five stars, exceeded every expectation.",
    ],
    "negative": [
        "The film was boring and far too long.",
        "Rude staff and cold food, never again.",
        "The worst pizza I have ever tasted.",
        "I could not finish this dull book.",
        "It broke after two days, a waste of money.",
        "The hotel room was dirty and noisy.",
        "Terrible sound at the concert, we left early.",
        "Useless answer, it did not help at all.",
        "The update made the app crash constantly.",
        "A cold, clichéd and tedious story.",
        "Our guide was late and unfriendly.",
        "One star, disappointing in every way.",
    ],
}
SENTIMENT_HELD_OUT = [
    "I really enjoyed the meal, the dessert was superb.",
    "The package arrived damaged and support ignored me.",
    "A lovely evening with great music.",
    "The battery died within an hour, very annoying.",
    "It was fine, nothing special.",
    "Wonderful people, terrible weather.",
    "Ça ne marche pas du tout 😡",
    "Best purchase of the year!",
]

# (name, examples, held-out texts, C)
SETS = {"topics": (TOPICS, TOPIC_HELD_OUT), "sentiment": (SENTIMENT, SENTIMENT_HELD_OUT)}
CASES = [("topics", 1.0), ("topics", 10.0), ("sentiment", 1.0), ("sentiment", 25.0)]


def features(model, tok, texts):
    out = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt")
            h = model(**enc).last_hidden_state[0]
            mask = enc["attention_mask"][0].unsqueeze(-1).to(h.dtype)
            v = (h * mask).sum(0) / mask.sum().clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(v, p=2, dim=0, eps=1e-12).numpy())
    return np.stack(out).astype(np.float32)


def fit(x, y, c, solver):
    clf = LogisticRegression(C=c, l1_ratio=0.0, solver=solver, tol=1e-10, max_iter=100000)
    return clf.fit(x.astype(np.float64), y)


def r(a):
    return [float(f"{v:.9g}") for v in np.asarray(a, dtype=np.float64).ravel()]


def main():
    tok = AutoTokenizer.from_pretrained(ROOT / "models" / "minilm")
    model = AutoModel.from_pretrained(ROOT / "models" / "minilm", attn_implementation="eager").eval()
    tensors, sets = {}, {}
    for name, (by_label, held_out) in SETS.items():
        examples = [{"text": t, "label": label} for label, ts in by_label.items() for t in ts]
        x = features(model, tok, [e["text"] for e in examples])
        xh = features(model, tok, held_out)
        tensors[f"{name}.train"] = x
        tensors[f"{name}.held_out"] = xh
        sets[name] = {"examples": examples, "held_out": held_out}
    cases = []
    for name, c in CASES:
        examples = sets[name]["examples"]
        x, xh = tensors[f"{name}.train"], tensors[f"{name}.held_out"]
        y = np.array([e["label"] for e in examples])
        clf = fit(x, y, c, "lbfgs")
        check = fit(x, y, c, "newton-cg")
        proba = clf.predict_proba(xh.astype(np.float64))
        drift = float(np.abs(proba - check.predict_proba(xh.astype(np.float64))).max())
        assert drift < 1e-7, f"{name} C={c}: lbfgs and newton-cg differ by {drift}"
        intercept = clf.intercept_ - (clf.intercept_.mean() if len(clf.classes_) > 2 else 0.0)
        top = np.sort(proba, axis=1)
        gap = float((top[:, -1] - top[:, -2]).min())
        print(f"{name} C={c}: {clf.n_iter_[0]} iterations, lbfgs vs newton-cg {drift:.1e}, "
              f"smallest top-2 gap {gap:.3f}")
        cases.append({
            "set": name,
            "C": c,
            "classes": [str(k) for k in clf.classes_],
            "coef_shape": list(clf.coef_.shape),
            "coef": r(clf.coef_),
            "intercept": r(intercept),
            "n_iter": int(clf.n_iter_[0]),
            "held_out_proba": [r(p) for p in proba],
            "held_out_labels": [str(k) for k in clf.predict(xh.astype(np.float64))],
            "lbfgs_vs_newton_cg_max_abs": drift,
        })
    golden = {
        "about": "scikit-learn LogisticRegression on all-MiniLM-L6-v2 mean/L2 features; "
                 "see scripts/make_train_golden.py",
        "features": "train_features.safetensors: '<set>.train' [n, 384] and "
                    "'<set>.held_out' [m, 384], f32, in the order of examples / held_out",
        "fit": {"solver": "lbfgs", "tol": 1e-10, "max_iter": 100000, "penalty": "l2"},
        "intercept_note": "multinomial intercepts centred to sum 0 (softmax ignores a common shift)",
        "versions": {
            "sklearn": sklearn.__version__, "scipy": scipy.__version__, "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": np.__version__,
            "safetensors": safetensors.__version__,
        },
        "sets": sets,
        "cases": cases,
    }
    (OUT / "train.json").write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    save_file(tensors, str(OUT / "train_features.safetensors"))
    print("wrote tests/golden/train.json and train_features.safetensors")


if __name__ == "__main__":
    main()
