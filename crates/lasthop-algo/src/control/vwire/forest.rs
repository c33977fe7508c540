//! A compact random-forest evaluator for the flow classifier (§III-C: "we use the random forest
//! algorithm").
//!
//! The forest is trained offline by `python/lasthop/vwire_train.py` (scikit-learn's
//! `RandomForestClassifier`) and shipped as text ([`SHIPPED_MODEL`], `model/forest-v1.txt`), so
//! hosts need no Python. Evaluation reproduces scikit-learn's `predict` exactly: the feature
//! vector is read as f32, a split sends x to the left child when `(x[f] as f64) <= threshold`
//! (thresholds are kept in f64, as scikit-learn stores them — rounding them to f32 could flip a
//! comparison), the per-tree leaf class fractions are summed in tree order from 0, divided by
//! the number of trees, and the first largest mean wins. [`Forest::vote`] gives the majority vote
//! of the trees' own argmaxes instead.
//!
//! ## Text format, version 1
//!
//! Line-oriented, whitespace-separated; blank lines and lines starting with `#` are ignored.
//!
//! ```text
//! lasthop-forest 1
//! features <F>                      number of features, 1 ..= 65535
//! classes <C> <name_0> … <name_C-1>  class names, 2 ..= 256
//! trees <T>                         1 ..= 10000
//! tree <N>                          then N node lines, node 0 the root; repeated T times
//! s <feature> <threshold> <left> <right>    split: feature < F, finite threshold,
//!                                           parent < left, right < N
//! l <p_0> … <p_C-1>                 leaf: class fractions, finite, ≥ 0
//! end
//! ```
//!
//! Children always have larger indices than their parent (scikit-learn numbers nodes in
//! depth-first order), so evaluation always terminates. Every violation is an [`ForestError`]
//! naming the line and what is wrong; parsing never panics.
//!
//! Storage is flat: one node array for all trees (split feature `u16`, threshold `f64`, children
//! as absolute `u32` indices; a leaf stores the offset of its C fractions in one `f64` array).

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// The model shipped with lasthop, trained by `python/lasthop/vwire_train.py`.
pub const SHIPPED_MODEL: &str = include_str!("model/forest-v1.txt");

/// The format version this parser reads.
pub const FOREST_FORMAT_VERSION: u32 = 1;

const LEAF: u16 = u16::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    /// Split feature, or `LEAF`.
    feature: u16,
    threshold: f64,
    /// Split: left child (absolute index). Leaf: offset into `probs`.
    left: u32,
    /// Split: right child (absolute index).
    right: u32,
}

/// A parsed forest.
#[derive(Clone, Debug, PartialEq)]
pub struct Forest {
    n_features: usize,
    classes: Vec<String>,
    roots: Vec<u32>,
    nodes: Vec<Node>,
    probs: Vec<f64>,
}

/// What is wrong with a model text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForestErrorKind {
    /// The first line is not `lasthop-forest <version>`.
    BadMagic,
    /// A version this parser does not read.
    UnsupportedVersion(u32),
    /// Expected a line starting with this keyword.
    Expected(&'static str),
    /// A field is not a number of the right type, or is out of its range.
    BadField {
        field: &'static str,
        allowed: &'static str,
    },
    /// The line has the wrong number of fields.
    FieldCount { expected: usize, got: usize },
    /// A split names a feature ≥ the feature count.
    FeatureOutOfRange { feature: usize, features: usize },
    /// A split's child is not after its parent or not in the tree.
    ChildOutOfRange { child: usize, nodes: usize },
    /// The text ended early.
    UnexpectedEnd,
    /// Something after `end`.
    TrailingData,
}

/// A model parse error: the line (1-based, 0 for the end of input) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForestError {
    pub line: usize,
    pub kind: ForestErrorKind,
}

impl fmt::Display for ForestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "forest model, line {}: ", self.line)?;
        match &self.kind {
            ForestErrorKind::BadMagic => write!(f, "expected `lasthop-forest <version>`"),
            ForestErrorKind::UnsupportedVersion(v) => write!(
                f,
                "format version {v} not supported (this reader: {FOREST_FORMAT_VERSION})"
            ),
            ForestErrorKind::Expected(k) => write!(f, "expected a `{k}` line"),
            ForestErrorKind::BadField { field, allowed } => {
                write!(f, "bad {field}: allowed {allowed}")
            }
            ForestErrorKind::FieldCount { expected, got } => {
                write!(f, "expected {expected} fields, got {got}")
            }
            ForestErrorKind::FeatureOutOfRange { feature, features } => {
                write!(f, "feature {feature} out of range (model has {features})")
            }
            ForestErrorKind::ChildOutOfRange { child, nodes } => write!(
                f,
                "child {child} must be after its parent and below the tree's {nodes} nodes"
            ),
            ForestErrorKind::UnexpectedEnd => write!(f, "unexpected end of model"),
            ForestErrorKind::TrailingData => write!(f, "data after `end`"),
        }
    }
}

struct Lines<'a> {
    inner: core::iter::Enumerate<core::str::Lines<'a>>,
    line: usize,
}

impl<'a> Lines<'a> {
    /// The next non-blank, non-comment line, split into fields.
    fn next(&mut self) -> Result<Vec<&'a str>, ForestError> {
        for (i, l) in self.inner.by_ref() {
            let t = l.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            self.line = i + 1;
            return Ok(t.split_whitespace().collect());
        }
        self.line = 0;
        Err(ForestError {
            line: 0,
            kind: ForestErrorKind::UnexpectedEnd,
        })
    }

    fn err(&self, kind: ForestErrorKind) -> ForestError {
        ForestError {
            line: self.line,
            kind,
        }
    }

    fn keyword(&mut self, k: &'static str) -> Result<Vec<&'a str>, ForestError> {
        let f = self.next()?;
        if f[0] != k {
            return Err(self.err(ForestErrorKind::Expected(k)));
        }
        Ok(f)
    }

    fn count(
        &self,
        s: &str,
        field: &'static str,
        lo: usize,
        hi: usize,
        allowed: &'static str,
    ) -> Result<usize, ForestError> {
        match s.parse::<usize>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(self.err(ForestErrorKind::BadField { field, allowed })),
        }
    }

    fn real(
        &self,
        s: &str,
        field: &'static str,
        allowed: &'static str,
    ) -> Result<f64, ForestError> {
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.err(ForestErrorKind::BadField { field, allowed })),
        }
    }

    fn fields(&self, f: &[&str], expected: usize) -> Result<(), ForestError> {
        if f.len() != expected {
            return Err(self.err(ForestErrorKind::FieldCount {
                expected,
                got: f.len(),
            }));
        }
        Ok(())
    }
}

impl Forest {
    /// Parse the text format (module documentation).
    pub fn parse(text: &str) -> Result<Forest, ForestError> {
        let mut ls = Lines {
            inner: text.lines().enumerate(),
            line: 0,
        };
        let f = ls.next()?;
        if f[0] != "lasthop-forest" || f.len() != 2 {
            return Err(ls.err(ForestErrorKind::BadMagic));
        }
        let version: u32 = f[1]
            .parse()
            .map_err(|_| ls.err(ForestErrorKind::BadMagic))?;
        if version != FOREST_FORMAT_VERSION {
            return Err(ls.err(ForestErrorKind::UnsupportedVersion(version)));
        }
        let f = ls.keyword("features")?;
        ls.fields(&f, 2)?;
        let n_features = ls.count(f[1], "features", 1, 65_535, "1 ..= 65535")?;
        let f = ls.keyword("classes")?;
        if f.len() < 2 {
            return Err(ls.err(ForestErrorKind::FieldCount {
                expected: 2,
                got: f.len(),
            }));
        }
        let n_classes = ls.count(f[1], "classes", 2, 256, "2 ..= 256")?;
        ls.fields(&f, 2 + n_classes)?;
        let classes: Vec<String> = f[2..].iter().map(|s| String::from(*s)).collect();
        let f = ls.keyword("trees")?;
        ls.fields(&f, 2)?;
        let n_trees = ls.count(f[1], "trees", 1, 10_000, "1 ..= 10000")?;
        let mut forest = Forest {
            n_features,
            classes,
            roots: Vec::with_capacity(n_trees),
            nodes: Vec::new(),
            probs: Vec::new(),
        };
        for _ in 0..n_trees {
            let f = ls.keyword("tree")?;
            ls.fields(&f, 2)?;
            let n = ls.count(f[1], "tree nodes", 1, 1 << 20, "1 ..= 1048576")?;
            let base = forest.nodes.len();
            forest.roots.push(base as u32);
            for j in 0..n {
                let f = ls.next()?;
                match f[0] {
                    "s" => {
                        ls.fields(&f, 5)?;
                        let feature = ls.count(f[1], "split feature", 0, usize::MAX, "an index")?;
                        if feature >= n_features {
                            return Err(ls.err(ForestErrorKind::FeatureOutOfRange {
                                feature,
                                features: n_features,
                            }));
                        }
                        let threshold = ls.real(f[2], "threshold", "a finite number")?;
                        let mut child = [0u32; 2];
                        for (c, s) in child.iter_mut().zip(&f[3..5]) {
                            let k = ls.count(s, "child", 0, usize::MAX, "a node index")?;
                            if k <= j || k >= n {
                                return Err(
                                    ls.err(ForestErrorKind::ChildOutOfRange { child: k, nodes: n })
                                );
                            }
                            *c = (base + k) as u32;
                        }
                        forest.nodes.push(Node {
                            feature: feature as u16,
                            threshold,
                            left: child[0],
                            right: child[1],
                        });
                    }
                    "l" => {
                        ls.fields(&f, 1 + n_classes)?;
                        let off = forest.probs.len() as u32;
                        for s in &f[1..] {
                            let p = ls.real(s, "leaf fraction", "finite and >= 0")?;
                            if p < 0.0 {
                                return Err(ls.err(ForestErrorKind::BadField {
                                    field: "leaf fraction",
                                    allowed: "finite and >= 0",
                                }));
                            }
                            forest.probs.push(p);
                        }
                        forest.nodes.push(Node {
                            feature: LEAF,
                            threshold: 0.0,
                            left: off,
                            right: 0,
                        });
                    }
                    _ => return Err(ls.err(ForestErrorKind::Expected("s` or `l"))),
                }
            }
        }
        ls.keyword("end")?;
        match ls.next() {
            Err(_) => Ok(forest),
            Ok(_) => Err(ls.err(ForestErrorKind::TrailingData)),
        }
    }

    /// The shipped model.
    pub fn shipped() -> Forest {
        Forest::parse(SHIPPED_MODEL).expect("the shipped model parses (checked by the tests)")
    }

    pub fn n_features(&self) -> usize {
        self.n_features
    }

    pub fn n_trees(&self) -> usize {
        self.roots.len()
    }

    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The leaf fractions tree `t` gives `x` (x shorter than the feature count reads 0s).
    fn leaf(&self, t: usize, x: &[f32]) -> &[f64] {
        let mut k = self.roots[t] as usize;
        loop {
            let n = &self.nodes[k];
            if n.feature == LEAF {
                let off = n.left as usize;
                return &self.probs[off..off + self.classes.len()];
            }
            let v = x.get(n.feature as usize).copied().unwrap_or(0.0) as f64;
            k = if v <= n.threshold { n.left } else { n.right } as usize;
        }
    }

    /// Mean class fractions over the trees (scikit-learn's `predict_proba`).
    pub fn predict_proba(&self, x: &[f32]) -> Vec<f64> {
        let mut p = vec![0.0; self.classes.len()];
        for t in 0..self.roots.len() {
            for (a, b) in p.iter_mut().zip(self.leaf(t, x)) {
                *a += b;
            }
        }
        let n = self.roots.len() as f64;
        for a in &mut p {
            *a /= n;
        }
        p
    }

    /// The class with the largest mean fraction, the first on ties (scikit-learn's `predict`).
    pub fn predict(&self, x: &[f32]) -> usize {
        argmax(&self.predict_proba(x))
    }

    /// Majority vote of the trees' own argmaxes, the lowest class on ties.
    pub fn vote(&self, x: &[f32]) -> usize {
        let mut votes = vec![0u32; self.classes.len()];
        for t in 0..self.roots.len() {
            votes[argmax(self.leaf(t, x))] += 1;
        }
        let mut best = 0;
        for (k, &v) in votes.iter().enumerate() {
            if v > votes[best] {
                best = k;
            }
        }
        best
    }
}

fn argmax(p: &[f64]) -> usize {
    let mut best = 0;
    for (k, &v) in p.iter().enumerate() {
        if v > p[best] {
            best = k;
        }
    }
    best
}
