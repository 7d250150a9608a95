//! Component specs: `NAME[:key=value[,key=value…]]`, the one syntax for schedulers, devices and
//! workloads (`cfq:slice_idle=0,quantum=8`, `hdd:rpm=15000`, `job:rw=randread,bs=4k`).
//!
//! This module only splits the text and checks its shape; what names and keys mean is the
//! business of the registry that owns the component kind. Errors say which part of the text is
//! wrong and what the shape should be.

use std::fmt;

/// A parsed spec: a name and its parameters in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentSpec {
    /// The component name, e.g. `cfq`.
    pub name: String,
    /// `key=value` pairs in the order given; keys are unique.
    pub params: Vec<Param>,
}

/// One `key=value` parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The key as given.
    pub key: String,
    /// The value as given (not yet interpreted).
    pub value: String,
}

/// A spec whose shape is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} spec `{text}`: {problem} (expected NAME[:key=value[,key=value...]])")]
pub struct SpecError {
    /// What kind of component the spec was for (`scheduler`, `device`, `workload`).
    pub kind: &'static str,
    /// The whole spec as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: SpecProblem,
}

/// What is wrong with a spec's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecProblem {
    /// No name before the `:`.
    MissingName,
    /// The name has characters other than letters, digits, `-`, `_` and `.`.
    BadName(String),
    /// A parameter without `=`.
    MissingValue(String),
    /// A parameter with an empty key, or a key with characters other than letters, digits and
    /// `_`.
    BadKey(String),
    /// A key given twice.
    DuplicateKey(String),
    /// A `,` with nothing before or after it.
    EmptyParameter,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecProblem::MissingName => f.write_str("no name"),
            SpecProblem::BadName(name) => write!(f, "`{name}` is not a valid name"),
            SpecProblem::MissingValue(param) => write!(f, "`{param}` has no `=value`"),
            SpecProblem::BadKey(key) => write!(f, "`{key}` is not a valid key"),
            SpecProblem::DuplicateKey(key) => write!(f, "`{key}` is given twice"),
            SpecProblem::EmptyParameter => f.write_str("empty parameter between commas"),
        }
    }
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_key(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ComponentSpec {
    /// Splits `text` into a name and parameters. `kind` names the component in errors.
    pub fn parse(kind: &'static str, text: &str) -> Result<ComponentSpec, SpecError> {
        let error = |problem| SpecError { kind, text: text.to_owned(), problem };
        let trimmed = text.trim();
        let (name, rest) = match trimmed.split_once(':') {
            Some((name, rest)) => (name.trim(), Some(rest)),
            None => (trimmed, None),
        };
        if name.is_empty() {
            return Err(error(SpecProblem::MissingName));
        }
        if !is_name(name) {
            return Err(error(SpecProblem::BadName(name.to_owned())));
        }
        let mut params: Vec<Param> = Vec::new();
        if let Some(rest) = rest {
            for part in rest.split(',') {
                let part = part.trim();
                if part.is_empty() {
                    return Err(error(SpecProblem::EmptyParameter));
                }
                let Some((key, value)) = part.split_once('=') else {
                    return Err(error(SpecProblem::MissingValue(part.to_owned())));
                };
                let key = key.trim();
                if !is_key(key) {
                    return Err(error(SpecProblem::BadKey(key.to_owned())));
                }
                if params.iter().any(|param| param.key == key) {
                    return Err(error(SpecProblem::DuplicateKey(key.to_owned())));
                }
                params.push(Param { key: key.to_owned(), value: value.trim().to_owned() });
            }
        }
        Ok(ComponentSpec { name: name.to_owned(), params })
    }
}

impl fmt::Display for ComponentSpec {
    /// The canonical form: `name:key=value,...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (index, param) in self.params.iter().enumerate() {
            let separator = if index == 0 { ':' } else { ',' };
            write!(f, "{separator}{}={}", param.key, param.value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parameters_split() {
        let spec = ComponentSpec::parse("scheduler", "cfq:slice_idle=0, quantum=8").unwrap();
        assert_eq!(spec.name, "cfq");
        assert_eq!(spec.params.len(), 2);
        assert_eq!(spec.params[1], Param { key: "quantum".into(), value: "8".into() });
        assert_eq!(spec.to_string(), "cfq:slice_idle=0,quantum=8");
        assert_eq!(ComponentSpec::parse("scheduler", "noop").unwrap().params, []);
    }

    // Proves each malformed shape is named in the error.
    #[test]
    fn malformed_specs_say_what_is_wrong() {
        let problem = |text| ComponentSpec::parse("scheduler", text).unwrap_err().problem;
        assert_eq!(problem(""), SpecProblem::MissingName);
        assert_eq!(problem(":a=1"), SpecProblem::MissingName);
        assert_eq!(problem("cf q"), SpecProblem::BadName("cf q".into()));
        assert_eq!(problem("cfq:slice_idle"), SpecProblem::MissingValue("slice_idle".into()));
        assert_eq!(problem("cfq:=1"), SpecProblem::BadKey(String::new()));
        assert_eq!(problem("cfq:a=1,a=2"), SpecProblem::DuplicateKey("a".into()));
        assert_eq!(problem("cfq:a=1,"), SpecProblem::EmptyParameter);
        let message = ComponentSpec::parse("scheduler", "cfq:slice_idle").unwrap_err().to_string();
        assert_eq!(
            message,
            "scheduler spec `cfq:slice_idle`: `slice_idle` has no `=value` \
             (expected NAME[:key=value[,key=value...]])"
        );
    }
}
