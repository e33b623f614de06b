//! Metadata (AVU) query conditions as users write them: `attr=value`, `attr>number`, ...

use crate::error::{Error, ErrorCode};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest attribute, value or unit, in bytes.
pub const MAX_AVU_LEN: usize = 2700;

/// The metadata (attribute, value) of a collection that has every object written below it
/// read by the zone's extractors (`weft extract enable`).
pub const EXTRACT_ON: (&str, &str) = ("weft.extract", "on");
/// The state of a collection's dataset: `open` while an instrument writes it, `closed`
/// once it is complete (`weft dataset close`, `weft watch --close-on`), which fires the
/// policy trigger `dataset_closed`.
pub const DATASET: &str = "weft.dataset";
pub const DATASET_OPEN: &str = "open";
pub const DATASET_CLOSED: &str = "closed";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetaOp {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl MetaOp {
    pub fn as_str(self) -> &'static str {
        match self {
            MetaOp::Eq => "=",
            MetaOp::Ne => "!=",
            MetaOp::Lt => "<",
            MetaOp::Le => "<=",
            MetaOp::Gt => ">",
            MetaOp::Ge => ">=",
        }
    }
    /// Ordering operators compare numbers; `=` and `!=` compare strings.
    pub fn is_numeric(self) -> bool {
        matches!(self, MetaOp::Lt | MetaOp::Le | MetaOp::Gt | MetaOp::Ge)
    }
}

/// One condition of `weft find --meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetaCondition {
    pub attr: String,
    pub op: MetaOp,
    pub value: String,
}

impl MetaCondition {
    pub fn parse(s: &str) -> Result<Self, Error> {
        // Two-character operators first, so `a>=1` is not read as `a>` `=1`.
        let ops = [
            MetaOp::Ge,
            MetaOp::Le,
            MetaOp::Ne,
            MetaOp::Eq,
            MetaOp::Gt,
            MetaOp::Lt,
        ];
        let found = ops
            .iter()
            .filter_map(|op| s.find(op.as_str()).map(|i| (i, *op)))
            .min_by_key(|(i, op)| (*i, std::cmp::Reverse(op.as_str().len())));
        let Some((i, op)) = found else {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("metadata condition {s:?} has no operator; write attr=value, attr!=value or attr>number (<, <=, >=)"),
            ));
        };
        let cond = MetaCondition {
            attr: s[..i].trim().to_owned(),
            op,
            value: s[i + op.as_str().len()..].trim().to_owned(),
        };
        cond.validate()?;
        Ok(cond)
    }

    pub fn validate(&self) -> Result<(), Error> {
        validate_avu_part("attribute", &self.attr)?;
        if self.value.len() > MAX_AVU_LEN {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("metadata value exceeds {MAX_AVU_LEN} bytes"),
            ));
        }
        if self.op.is_numeric() && self.number().is_none() {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!(
                    "{} compares numbers, but {:?} is not a number",
                    self.op.as_str(),
                    self.value
                ),
            ));
        }
        Ok(())
    }

    pub fn number(&self) -> Option<f64> {
        parse_number(&self.value)
    }
}

impl fmt::Display for MetaCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `a! = b` (attribute `a!`) printed as `a!=b` read back as `a != b`: a space keeps
        // the `!` in the attribute (found by fuzz/paths_and_names).
        let gap = if self.op == MetaOp::Eq && self.attr.ends_with('!') {
            " "
        } else {
            ""
        };
        write!(f, "{}{gap}{}{}", self.attr, self.op.as_str(), self.value)
    }
}

/// The numeric reading of a metadata value, stored beside it so that `attr>number` queries
/// are answered from an index.
pub fn parse_number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Checks an attribute, value or unit given by a user: one line of text (a value may hold
/// tabs), at most [`MAX_AVU_LEN`] bytes.
pub fn validate_avu_part(what: &str, s: &str) -> Result<(), Error> {
    if what == "attribute" && s.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            "metadata attribute is empty",
        ));
    }
    crate::text::check_text(&format!("metadata {what}"), s, MAX_AVU_LEN, what == "value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_conditions() {
        let c = MetaCondition::parse("temp>=4.5").unwrap();
        assert_eq!(
            (c.attr.as_str(), c.op, c.value.as_str()),
            ("temp", MetaOp::Ge, "4.5")
        );
        let c = MetaCondition::parse("sample=a=b").unwrap();
        assert_eq!(
            (c.attr.as_str(), c.op, c.value.as_str()),
            ("sample", MetaOp::Eq, "a=b")
        );
        assert_eq!(MetaCondition::parse("x!=1").unwrap().op, MetaOp::Ne);
        assert_eq!(MetaCondition::parse("x<1e3").unwrap().number(), Some(1000.0));
    }

    #[test]
    fn prints_what_parses_back_to_itself() {
        // Found by fuzz/paths_and_names: `a!` `=` `b` printed as `a!=b`, which is `!=`.
        for s in ["ä ô/zc! =ô//", "a! = b", "a!!=b", "a==b", "x>=-1e3"] {
            let c = MetaCondition::parse(s).unwrap();
            assert_eq!(MetaCondition::parse(&c.to_string()).unwrap(), c, "{s:?} → {c}");
        }
    }

    #[test]
    fn rejects_bad_conditions() {
        for bad in ["noop", "=v", "x>abc", "x<", "x>=NaN"] {
            assert!(MetaCondition::parse(bad).is_err(), "{bad}");
        }
    }
}
