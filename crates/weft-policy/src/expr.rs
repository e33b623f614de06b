//! Place expressions: which zones and resources copies go to, or come from.
//!
//! Grammar (`&` binds tighter than `|`; whitespace is free):
//! ```text
//! expr := and ('|' and)*
//! and  := atom ('&' atom)*
//! atom := '(' expr ')' | key op value
//! key  := 'zone' | 'resource' | 'tier'          (QosExpr also: 'replicas' '=' N)
//! op   := '=' | '!='
//! value:= a name ([a-z0-9][a-z0-9._-]*), or 'origin' (zone only: the object's own zone)
//! ```
//! An expression that no place could ever match (`zone = a & zone = b`, `tier = x & tier != x`,
//! in every alternative) is refused when parsed, as self-contradicting.

use serde::{Deserialize, Serialize};
use std::fmt;
use weft_types::{Error, ErrorCode};

/// Longest name a term compares with.
const MAX_NAME: usize = 63;
/// Deepest nesting of parentheses (keeps the recursive parser's stack small on hostile input).
const MAX_DEPTH: usize = 32;

/// A place copies can be at: a resource of a zone, and its tier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Place {
    pub zone: String,
    pub resource: String,
    pub tier: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Zone,
    Resource,
    Tier,
}

impl Key {
    fn as_str(self) -> &'static str {
        match self {
            Key::Zone => "zone",
            Key::Resource => "resource",
            Key::Tier => "tier",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Origin,
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    key: Key,
    negated: bool,
    value: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Term(Term),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// A parsed place expression; serialises as its canonical text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TargetExpr {
    root: Node,
}

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidPolicy, msg)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// Names, keys and numbers alike: `007` must stay `007` when it is a zone name.
    Word(String),
    Eq,
    Ne,
    And,
    Or,
    Open,
    Close,
}

/// Tokens with their 1-based columns.
fn lex(s: &str) -> Result<Vec<(Tok, usize)>, Error> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        match c {
            c if c.is_whitespace() => i += 1,
            '&' => {
                out.push((Tok::And, col));
                i += 1;
            }
            '|' => {
                out.push((Tok::Or, col));
                i += 1;
            }
            '(' => {
                out.push((Tok::Open, col));
                i += 1;
            }
            ')' => {
                out.push((Tok::Close, col));
                i += 1;
            }
            '=' => {
                out.push((Tok::Eq, col));
                i += 1;
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                out.push((Tok::Ne, col));
                i += 2;
            }
            c if c.is_ascii_alphanumeric() => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '.' | '_' | '-'))
                {
                    i += 1;
                }
                out.push((Tok::Word(chars[start..i].iter().collect()), col));
            }
            other => return Err(err(format!("unexpected {other:?} at column {col}"))),
        }
    }
    Ok(out)
}

fn text(t: &Tok) -> String {
    match t {
        Tok::Word(w) => w.clone(),
        Tok::Eq => "=".into(),
        Tok::Ne => "!=".into(),
        Tok::And => "&".into(),
        Tok::Or => "|".into(),
        Tok::Open => "(".into(),
        Tok::Close => ")".into(),
    }
}

struct Parser<'a> {
    toks: &'a [(Tok, usize)],
    pos: usize,
    end_col: usize,
    /// `replicas = N` terms allowed (QoS), and those found at the top level.
    qos: bool,
    replicas: Vec<u32>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_col, |(_, c)| *c)
    }

    fn expr(&mut self, depth: usize) -> Result<Option<Node>, Error> {
        if depth > MAX_DEPTH {
            return Err(err(format!("parentheses nested deeper than {MAX_DEPTH}")));
        }
        let mut alts = Vec::new();
        // Alternatives as written: `replicas = N` may not sit beside a `|`, even one whose
        // other side is parenthesised or holds only `replicas`.
        let mut written = 0;
        loop {
            written += 1;
            match self.and(depth)? {
                // `a | (b | c)` is `a | b | c`: one shape per meaning, so Display round-trips.
                Some(Node::Or(inner)) => alts.extend(inner),
                Some(n) => alts.push(n),
                None => {}
            }
            if self.peek() == Some(&Tok::Or) {
                self.pos += 1;
                continue;
            }
            break;
        }
        if depth == 0 && !self.replicas.is_empty() && written > 1 {
            return Err(err(
                "replicas=N must be a term of the top-level `&`, not an alternative of `|`",
            ));
        }
        Ok(match alts.len() {
            0 => None,
            1 => alts.pop(),
            _ => Some(Node::Or(alts)),
        })
    }

    /// A conjunction; `None` when it held only `replicas = N` terms (top level of QoS).
    fn and(&mut self, depth: usize) -> Result<Option<Node>, Error> {
        let mut terms = Vec::new();
        loop {
            match self.atom(depth)? {
                Some(Node::And(inner)) => terms.extend(inner),
                Some(n) => terms.push(n),
                None => {}
            }
            if self.peek() == Some(&Tok::And) {
                self.pos += 1;
                continue;
            }
            break;
        }
        Ok(match terms.len() {
            0 => None,
            1 => terms.pop(),
            _ => Some(Node::And(terms)),
        })
    }

    fn atom(&mut self, depth: usize) -> Result<Option<Node>, Error> {
        let col = self.col();
        match self.toks.get(self.pos).cloned() {
            Some((Tok::Open, _)) => {
                self.pos += 1;
                if self.peek() == Some(&Tok::Close) {
                    return Err(err(format!("empty parentheses at column {col}")));
                }
                let inner = self.expr(depth + 1)?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(err(format!("expected `)` at column {}", self.col())));
                }
                self.pos += 1;
                inner
                    .map(Some)
                    .ok_or_else(|| err(format!("empty parentheses at column {col}")))
            }
            Some((Tok::Word(w), _)) => {
                self.pos += 1;
                let negated = match self.peek() {
                    Some(Tok::Eq) => false,
                    Some(Tok::Ne) => true,
                    _ => {
                        return Err(err(format!(
                            "expected `=` or `!=` after {w:?} at column {}",
                            self.col()
                        )))
                    }
                };
                self.pos += 1;
                let vcol = self.col();
                let value = match self.toks.get(self.pos).cloned() {
                    Some((Tok::Word(v), _)) => v,
                    _ => {
                        return Err(err(format!(
                            "expected a value after {:?} at column {vcol}",
                            if negated { "!=" } else { "=" }
                        )))
                    }
                };
                self.pos += 1;
                self.term(&w, negated, &value, col, vcol, depth)
            }
            Some((t, c)) => Err(err(format!(
                "expected a term such as `zone = NAME` at column {c}, found `{}`",
                text(&t)
            ))),
            None => Err(err(format!(
                "expected a term such as `zone = NAME` at column {col}"
            ))),
        }
    }

    fn term(
        &mut self,
        key: &str,
        negated: bool,
        value: &str,
        col: usize,
        vcol: usize,
        depth: usize,
    ) -> Result<Option<Node>, Error> {
        let key = match key {
            "zone" => Key::Zone,
            "resource" => Key::Resource,
            "tier" => Key::Tier,
            "replicas" if self.qos => {
                if negated || depth > 0 {
                    return Err(err(format!(
                        "replicas=N must be a term of the top-level `&`, written with `=` (column {col})"
                    )));
                }
                let n: u32 = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| {
                        err(format!(
                            "replicas must be a number from 1 to 64, not {value:?} (column {vcol})"
                        ))
                    })?;
                self.replicas.push(n);
                return Ok(None);
            }
            other => {
                let keys = if self.qos {
                    "replicas, zone, resource or tier"
                } else {
                    "zone, resource or tier"
                };
                return Err(err(format!("unknown key {other:?} at column {col}: use {keys}")));
            }
        };
        let value = if value == "origin" {
            if key != Key::Zone {
                return Err(err(format!(
                    "`origin` is a zone; `{} = origin` means nothing (column {vcol})",
                    key.as_str()
                )));
            }
            Value::Origin
        } else {
            check_name(value, vcol)?;
            Value::Name(value.to_owned())
        };
        Ok(Some(Node::Term(Term { key, negated, value })))
    }
}

fn check_name(v: &str, col: usize) -> Result<(), Error> {
    let ok = v.len() <= MAX_NAME
        && v.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(err(format!(
            "{v:?} at column {col} is not a name: lower-case letters, digits, '.', '_' and '-', at most {MAX_NAME} bytes"
        )))
    }
}

/// Parses `s`; `qos` allows top-level `replicas = N` terms, returned apart.
fn parse(s: &str, qos: bool) -> Result<(Option<Node>, Vec<u32>), Error> {
    if s.trim().is_empty() {
        return Err(err("the expression is empty: write e.g. `zone != origin`"));
    }
    let toks = lex(s)?;
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        end_col: s.chars().count() + 1,
        qos,
        replicas: Vec::new(),
    };
    let root = p.expr(0)?;
    if p.pos < toks.len() {
        return Err(err(format!(
            "unexpected `{}` at column {}",
            text(&toks[p.pos].0),
            toks[p.pos].1
        )));
    }
    if let Some(root) = &root {
        if dnf(root).iter().all(|alt| contradicts(alt)) {
            return Err(err(format!(
                "`{}` contradicts itself: no place can match it",
                Show(root, 0)
            )));
        }
    }
    Ok((root, p.replicas))
}

/// Disjunctive normal form: the alternatives, each a conjunction of terms.
fn dnf(n: &Node) -> Vec<Vec<&Term>> {
    match n {
        Node::Term(t) => vec![vec![t]],
        Node::Or(alts) => alts.iter().flat_map(dnf).collect(),
        Node::And(parts) => {
            let mut acc: Vec<Vec<&Term>> = vec![Vec::new()];
            for p in parts {
                let alts = dnf(p);
                let mut next = Vec::new();
                for a in &acc {
                    for b in &alts {
                        let mut c = a.clone();
                        c.extend(b.iter().copied());
                        next.push(c);
                        if next.len() > 4096 {
                            // Hostile input: past this, contradiction is not worth proving.
                            return vec![Vec::new()];
                        }
                    }
                }
                acc = next;
            }
            acc
        }
    }
}

/// Whether a conjunction can match no place: one key required to equal two different
/// names, or to equal and differ from the same value. `zone = origin & zone = lrz` is not
/// one: it matches at lrz for objects of lrz.
fn contradicts(terms: &[&Term]) -> bool {
    terms.iter().enumerate().any(|(i, a)| {
        terms[i + 1..].iter().any(|b| {
            a.key == b.key
                && match (a.negated, b.negated) {
                    (false, false) => {
                        matches!((&a.value, &b.value), (Value::Name(x), Value::Name(y)) if x != y)
                    }
                    (false, true) | (true, false) => a.value == b.value,
                    (true, true) => false,
                }
        })
    })
}

fn eval(n: &Node, place: &Place, origin: &str) -> bool {
    match n {
        Node::Term(t) => {
            let have = match t.key {
                Key::Zone => &place.zone,
                Key::Resource => &place.resource,
                Key::Tier => &place.tier,
            };
            let want = match &t.value {
                Value::Origin => origin,
                Value::Name(v) => v.as_str(),
            };
            (have == want) != t.negated
        }
        Node::And(parts) => parts.iter().all(|p| eval(p, place, origin)),
        Node::Or(alts) => alts.iter().any(|a| eval(a, place, origin)),
    }
}

fn names(n: &Node, key: Key, out: &mut Vec<String>) {
    match n {
        Node::Term(Term {
            key: k,
            value: Value::Name(v),
            ..
        }) if *k == key => {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        Node::Term(_) => {}
        Node::And(parts) | Node::Or(parts) => parts.iter().for_each(|p| names(p, key, out)),
    }
}

/// Canonical text; `prec` 0 at the top, 1 inside `&` (an `|` there needs parentheses).
struct Show<'a>(&'a Node, u8);

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Node::Term(t) => {
                let v = match &t.value {
                    Value::Origin => "origin",
                    Value::Name(n) => n.as_str(),
                };
                write!(f, "{} {} {v}", t.key.as_str(), if t.negated { "!=" } else { "=" })
            }
            Node::And(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" & ")?;
                    }
                    write!(f, "{}", Show(p, 1))?;
                }
                Ok(())
            }
            Node::Or(alts) => {
                if self.1 > 0 {
                    f.write_str("(")?;
                }
                for (i, a) in alts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" | ")?;
                    }
                    write!(f, "{}", Show(a, 0))?;
                }
                if self.1 > 0 {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

impl TargetExpr {
    /// Errors: `invalid_policy`, naming the position and what was expected, or saying the
    /// expression contradicts itself.
    pub fn parse(s: &str) -> Result<TargetExpr, Error> {
        match parse(s, false)? {
            (Some(root), _) => Ok(TargetExpr { root }),
            (None, _) => Err(err("the place expression is empty: write e.g. `zone != origin`")),
        }
    }

    /// Whether `place` matches, for an object whose zone is `origin`.
    pub fn matches(&self, place: &Place, origin: &str) -> bool {
        eval(&self.root, place, origin)
    }

    /// Zone names the expression compares with (not `origin`), to check they exist.
    pub fn zones(&self) -> Vec<String> {
        let mut out = Vec::new();
        names(&self.root, Key::Zone, &mut out);
        out
    }

    /// Resource names the expression compares with.
    pub fn resources(&self) -> Vec<String> {
        let mut out = Vec::new();
        names(&self.root, Key::Resource, &mut out);
        out
    }

    /// Tier names the expression compares with.
    pub fn tiers(&self) -> Vec<String> {
        let mut out = Vec::new();
        names(&self.root, Key::Tier, &mut out);
        out
    }
}

impl fmt::Display for TargetExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Show(&self.root, 0))
    }
}

impl TryFrom<String> for TargetExpr {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        TargetExpr::parse(&s)
    }
}

impl From<TargetExpr> for String {
    fn from(e: TargetExpr) -> String {
        e.to_string()
    }
}

/// A QoS requirement: `replicas=N` (default 1) good copies at places matching the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QosExpr {
    pub replicas: u32,
    /// `None`: any place.
    pub filter: Option<TargetExpr>,
}

impl QosExpr {
    /// `replicas=N` must be a term of the top-level `&` (at most once, 1 ≤ N ≤ 64).
    /// Errors: `invalid_policy`.
    pub fn parse(s: &str) -> Result<QosExpr, Error> {
        let (root, replicas) = parse(s, true)?;
        let replicas = match replicas.as_slice() {
            [] => 1,
            [n] => *n,
            _ => return Err(err("replicas=N is given more than once")),
        };
        Ok(QosExpr {
            replicas,
            filter: root.map(|root| TargetExpr { root }),
        })
    }

    pub fn matches(&self, place: &Place, origin: &str) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(place, origin))
    }
}

impl fmt::Display for QosExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "replicas = {}", self.replicas)?;
        match &self.filter {
            // An `|` at the top of the filter needs parentheses under the `&`.
            Some(filter) => write!(f, " & {}", Show(&filter.root, 1)),
            None => Ok(()),
        }
    }
}

impl TryFrom<String> for QosExpr {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        QosExpr::parse(&s)
    }
}

impl From<QosExpr> for String {
    fn from(e: QosExpr) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(zone: &str, resource: &str, tier: &str) -> Place {
        Place {
            zone: zone.into(),
            resource: resource.into(),
            tier: tier.into(),
        }
    }

    #[test]
    fn matching_with_origin_and_precedence() {
        let e = TargetExpr::parse("zone != origin & tier = disk").unwrap();
        assert!(e.matches(&place("it4i", "default", "disk"), "lrz"));
        assert!(!e.matches(&place("lrz", "default", "disk"), "lrz"));
        assert!(!e.matches(&place("it4i", "tape", "tape"), "lrz"));
        // `&` binds tighter than `|`.
        let e = TargetExpr::parse("zone = a | zone = b & tier = tape").unwrap();
        assert!(e.matches(&place("a", "x", "disk"), "o"));
        assert!(!e.matches(&place("b", "x", "disk"), "o"));
        assert!(e.matches(&place("b", "x", "tape"), "o"));
        let e = TargetExpr::parse("(zone = a | zone = b) & tier = tape").unwrap();
        assert!(!e.matches(&place("a", "x", "disk"), "o"));
        assert_eq!(e.zones(), ["a", "b"]);
        assert_eq!(e.tiers(), ["tape"]);
        assert!(e.resources().is_empty());
    }

    #[test]
    fn canonical_text_round_trips() {
        for (input, canonical) in [
            ("zone!=origin&tier=disk", "zone != origin & tier = disk"),
            (
                "( zone = a | zone = b ) & tier = tape",
                "(zone = a | zone = b) & tier = tape",
            ),
            (
                "zone = a | resource = r1 & tier = t",
                "zone = a | resource = r1 & tier = t",
            ),
            ("((zone = a))", "zone = a"),
        ] {
            let e = TargetExpr::parse(input).unwrap();
            assert_eq!(e.to_string(), canonical);
            assert_eq!(TargetExpr::parse(canonical).unwrap(), e);
        }
    }

    #[test]
    fn bad_expressions_say_where() {
        for (input, says) in [
            ("", "empty"),
            ("zone", "expected `=` or `!=`"),
            ("zone =", "expected a value after \"=\" at column 7"),
            ("zone != ", "expected a value after \"!=\""),
            ("colour = red", "unknown key \"colour\""),
            ("zone = a &", "expected a term"),
            ("(zone = a", "expected `)`"),
            ("zone = a)", "unexpected"),
            ("zone = A", "not a name"),
            ("tier = origin", "`origin` is a zone"),
            ("zone = a & zone = b", "contradicts itself"),
            ("tier = x & tier != x", "contradicts itself"),
            ("zone = origin & zone != origin", "contradicts itself"),
            (
                "(zone = a & zone = b) | (tier = x & tier != x)",
                "contradicts itself",
            ),
            ("replicas = 2", "unknown key"),
            ("zone = a ; tier = b", "unexpected ';'"),
            ("zone = a zone = b", "unexpected `zone` at column 10"),
            ("()", "empty parentheses"),
        ] {
            let e = TargetExpr::parse(input).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidPolicy);
            assert!(e.message.contains(says), "{input:?}: {}", e.message);
        }
        // One alternative that can match is enough.
        TargetExpr::parse("(zone = a & zone = b) | tier = x").unwrap();
        TargetExpr::parse("zone != a & zone != b").unwrap();
    }

    #[test]
    fn qos_expressions() {
        let q = QosExpr::parse("replicas=2 & zone != origin").unwrap();
        assert_eq!(q.replicas, 2);
        assert_eq!(q.to_string(), "replicas = 2 & zone != origin");
        assert!(q.matches(&place("b", "d", "disk"), "a"));
        assert!(!q.matches(&place("a", "d", "disk"), "a"));
        let q = QosExpr::parse("replicas = 3").unwrap();
        assert_eq!((q.replicas, q.filter.is_none()), (3, true));
        assert!(q.matches(&place("a", "d", "disk"), "a"));
        let q = QosExpr::parse("tier = tape").unwrap();
        assert_eq!(q.replicas, 1);
        let q = QosExpr::parse("zone = a | zone = b & replicas = 2");
        assert!(q.is_err());
        let q = QosExpr::parse("replicas = 2 & (zone = a | zone = b)").unwrap();
        assert_eq!(q.to_string(), "replicas = 2 & (zone = a | zone = b)");
        assert_eq!(QosExpr::parse(&q.to_string()).unwrap(), q);
        for (bad, says) in [
            ("replicas=0", "1 to 64"),
            ("replicas=65", "1 to 64"),
            ("replicas=two", "1 to 64"),
            ("replicas != 2", "top-level"),
            ("replicas=2 & replicas=3", "more than once"),
            ("(replicas=2)", "top-level"),
            ("replicas=2 & (replicas=3 | zone=b)", "top-level"),
            ("zone = b | replicas = 2", "top-level"),
            ("", "empty"),
            ("replicas=2 & zone = a & zone = b", "contradicts"),
        ] {
            let e = QosExpr::parse(bad).unwrap_err();
            assert!(e.message.contains(says), "{bad:?}: {}", e.message);
        }
    }

    #[test]
    fn serde_uses_the_text() {
        let e = TargetExpr::parse("zone != origin").unwrap();
        let j = serde_json::to_string(&e).unwrap();
        assert_eq!(j, "\"zone != origin\"");
        assert_eq!(serde_json::from_str::<TargetExpr>(&j).unwrap(), e);
        assert!(serde_json::from_str::<TargetExpr>("\"zone ==\"").is_err());
    }

    #[test]
    fn nesting_flattens_so_text_round_trips() {
        for (input, canonical) in [
            (
                "zone = a & (tier = b & resource = c)",
                "zone = a & tier = b & resource = c",
            ),
            (
                "(zone = a | zone = b) | zone = c",
                "zone = a | zone = b | zone = c",
            ),
            (
                "zone = a | (zone = b | (zone = c))",
                "zone = a | zone = b | zone = c",
            ),
            (
                "(zone = a | zone = b) & (tier = x | tier = y)",
                "(zone = a | zone = b) & (tier = x | tier = y)",
            ),
            (
                "((zone = a & tier = b)) | tier = c",
                "zone = a & tier = b | tier = c",
            ),
        ] {
            let e = TargetExpr::parse(input).unwrap();
            assert_eq!(e.to_string(), canonical, "{input}");
            assert_eq!(TargetExpr::parse(canonical).unwrap(), e, "{input}");
        }
        let q = QosExpr::parse("zone = a & replicas = 3 & (tier = b & resource = c)").unwrap();
        assert_eq!(q.to_string(), "replicas = 3 & zone = a & tier = b & resource = c");
        assert_eq!(QosExpr::parse(&q.to_string()).unwrap(), q);
    }

    #[test]
    fn names_keep_their_text() {
        let e = TargetExpr::parse("zone = 007 & resource = 1.5 & tier = a_b-c").unwrap();
        assert_eq!(e.to_string(), "zone = 007 & resource = 1.5 & tier = a_b-c");
        assert_eq!(e.zones(), ["007"]);
        assert_eq!(e.resources(), ["1.5"]);
        let long = "a".repeat(63);
        TargetExpr::parse(&format!("zone = {long}")).unwrap();
        let e = TargetExpr::parse(&format!("zone = {long}a")).unwrap_err();
        assert!(e.message.contains("at most 63"), "{}", e.message);
        for bad in ["zone = -a", "zone = .a", "zone = _a", "zone = Lrz"] {
            assert!(TargetExpr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn origin_is_only_a_zone_and_compared_per_object() {
        let e = TargetExpr::parse("zone = origin & zone = lrz").unwrap();
        assert!(e.matches(&place("lrz", "r", "disk"), "lrz"));
        assert!(!e.matches(&place("lrz", "r", "disk"), "it4i"));
        assert!(e.zones() == ["lrz"], "origin is not a zone name: {:?}", e.zones());
        let e = TargetExpr::parse("zone = origin & zone != lrz").unwrap();
        assert!(e.matches(&place("it4i", "r", "disk"), "it4i"));
        assert!(!e.matches(&place("lrz", "r", "disk"), "lrz"));
        assert!(TargetExpr::parse("zone = origin").unwrap().zones().is_empty());
        for bad in ["resource = origin", "tier != origin"] {
            assert!(TargetExpr::parse(bad)
                .unwrap_err()
                .message
                .contains("`origin` is a zone"));
        }
        let e = TargetExpr::parse("zone != origin | tier = tape").unwrap();
        assert!(e.matches(&place("lrz", "t", "tape"), "lrz"));
        assert!(!e.matches(&place("lrz", "t", "disk"), "lrz"));
    }

    #[test]
    fn the_error_names_the_column() {
        let e = TargetExpr::parse("zone != ").unwrap_err();
        assert_eq!(e.message, "expected a value after \"!=\" at column 9");
        let e = TargetExpr::parse("zone = a & colour = b").unwrap_err();
        assert!(e.message.contains("column 12"), "{}", e.message);
        let e = TargetExpr::parse("zone = a & é").unwrap_err();
        assert!(e.message.contains("column 12"), "{}", e.message);
        let deep = format!("{}zone = a{}", "(".repeat(33), ")".repeat(33));
        assert!(TargetExpr::parse(&deep).unwrap_err().message.contains("nested"));
        let ok = format!("{}zone = a{}", "(".repeat(32), ")".repeat(32));
        TargetExpr::parse(&ok).unwrap();
    }

    #[test]
    fn qos_serde_and_defaults() {
        let q = QosExpr::parse("replicas=2 & zone != origin").unwrap();
        let j = serde_json::to_string(&q).unwrap();
        assert_eq!(j, "\"replicas = 2 & zone != origin\"");
        assert_eq!(serde_json::from_str::<QosExpr>(&j).unwrap(), q);
        assert!(serde_json::from_str::<QosExpr>("\"replicas = 0\"").is_err());
        let q = QosExpr::parse("zone = a | zone = b").unwrap();
        assert_eq!(
            (q.replicas, q.to_string().as_str()),
            (1, "replicas = 1 & (zone = a | zone = b)")
        );
        assert_eq!(QosExpr::parse(&q.to_string()).unwrap(), q);
        assert_eq!(QosExpr::parse("replicas = 64").unwrap().replicas, 64);
        assert_eq!(QosExpr::parse("replicas = 02").unwrap().replicas, 2);
        assert!(QosExpr::parse("replicas = 2 | replicas = 3").is_err());
    }
}
