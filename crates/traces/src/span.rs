//! The span record every reader produces.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AttrValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl AttrValue {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttrValue::Int(i) => Some(*i),
            AttrValue::Str(s) => s.parse().ok(),
            AttrValue::Float(f) => Some(*f as i64),
            AttrValue::Bool(_) => None,
        }
    }

    pub fn to_text(&self) -> String {
        match self {
            AttrValue::Bool(b) => b.to_string(),
            AttrValue::Int(i) => i.to_string(),
            AttrValue::Float(f) => f.to_string(),
            AttrValue::Str(s) => s.clone(),
        }
    }
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    /// `service.name` of the process that produced it.
    pub service: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attrs: BTreeMap<String, AttrValue>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&AttrValue> {
        self.attrs.get(key)
    }

    pub fn attr_text(&self, key: &str) -> Option<String> {
        self.attrs.get(key).map(AttrValue::to_text)
    }

    pub fn attr_i64(&self, key: &str) -> Option<i64> {
        self.attrs.get(key).and_then(AttrValue::as_i64)
    }

    pub fn duration_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }
}
