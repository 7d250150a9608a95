//! The block grammar of DiskSim 4.0's parameter files (`.parv`, `.diskspecs`, `.model`) and
//! its extracted seek curves (`.seek`).
//!
//! What the grammar is, learnt from DiskSim's manual (CMU-PDL-08-101 §3) and its `libparam`
//! documentation; this is our own reader:
//!
//! * `#` starts a comment running to the end of the line.
//! * A file is a sequence of top-level items: blocks `TYPE NAME { Key = value, ... }`,
//!   `source FILE` (the items of another file, found relative to the directory of the file
//!   naming it), `instantiate [ NAME, ... ] as TEMPLATE`, and `topology TYPE NAME [ ... ]`
//!   (nested `TYPE NAME [ ... ]` children).
//! * A parameter's name is everything before its `=` on that line (names hold spaces, dots,
//!   parentheses, slashes and hyphens: `Segment size (in blks)`); runs of blanks inside a
//!   name count as one space.
//! * A value is an integer, a real, a word (identifier or file name), a `"quoted string"`,
//!   a list `[ value, ... ]` (lists and blocks nest), an anonymous block `TYPE { ... }`, a
//!   named block `TYPE NAME { ... }`, or `source FILE` (the one block that file holds).
//!   Integers may be hexadecimal (`0x1f`); in a list `disk0 .. disk3` stands for the four
//!   names. A `,` must be followed by a parameter or item (DiskSim has no trailing commas).
//! * A top-level block whose type is an earlier block's name specializes that block.
//!
//! Not read: `[ Name1, Name2 ] = value` (one value for several parameters), which none of
//! the drive files uses.
//!
//! Errors name the file and line and say what was expected; nothing here panics on any input.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A refused parameter file: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {problem}", file.display())]
pub struct DiskSimError {
    /// The file.
    pub file: PathBuf,
    /// The line (from 1; 0 when the file could not be read at all).
    pub line: usize,
    /// What was wrong, or what was expected.
    pub problem: String,
}

/// Where something was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub file: Arc<PathBuf>,
    /// The line, from 1.
    pub line: usize,
}

impl Location {
    /// An error at this place.
    pub fn error(&self, problem: impl Into<String>) -> DiskSimError {
        DiskSimError { file: self.file.as_ref().clone(), line: self.line, problem: problem.into() }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A value as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A whole number.
    Integer(i64),
    /// A number with a fraction or exponent.
    Real(f64),
    /// An identifier, file name or quoted string.
    Word(String),
    /// `[ ... ]`.
    List(Vec<Node>),
    /// `TYPE [NAME] { ... }` or `source FILE`.
    Block(Block),
}

/// A value and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where.
    pub at: Location,
}

impl Node {
    /// The value as a number (integers and reals both).
    pub fn number(&self, name: &str) -> Result<f64, DiskSimError> {
        match self.value {
            Value::Integer(number) => Ok(number as f64),
            Value::Real(number) => Ok(number),
            _ => Err(self.at.error(format!("`{name}` must be a number"))),
        }
    }

    /// The value as a whole number (a real with no fraction is accepted, as DiskSim reads
    /// `Rotation speed (in rpms) = 10045.0`).
    pub fn integer(&self, name: &str) -> Result<i64, DiskSimError> {
        match self.value {
            Value::Integer(number) => Ok(number),
            Value::Real(number) if number.fract() == 0.0 && number.abs() < 9.0e15 => {
                Ok(number as i64)
            }
            _ => Err(self.at.error(format!("`{name}` must be a whole number"))),
        }
    }

    /// The value as a word.
    pub fn word(&self, name: &str) -> Result<&str, DiskSimError> {
        match &self.value {
            Value::Word(word) => Ok(word),
            _ => Err(self.at.error(format!("`{name}` must be a name"))),
        }
    }

    /// The value as a list.
    pub fn list(&self, name: &str) -> Result<&[Node], DiskSimError> {
        match &self.value {
            Value::List(items) => Ok(items),
            _ => Err(self.at.error(format!("`{name}` must be a list `[ ... ]`"))),
        }
    }

    /// The value as a block.
    pub fn block(&self, name: &str) -> Result<&Block, DiskSimError> {
        match &self.value {
            Value::Block(block) => Ok(block),
            _ => Err(self.at.error(format!("`{name}` must be a block `TYPE {{ ... }}`"))),
        }
    }
}

/// `Key = value` inside a block.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The name, blanks collapsed.
    pub name: String,
    /// The value.
    pub value: Node,
}

/// `TYPE NAME { ... }` or an anonymous `TYPE { ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// `disksim_disk`, `dm_layout_g1_zone`...
    pub type_name: String,
    /// The name of a top-level (or sourced) block.
    pub name: Option<String>,
    /// The parameters in the order written.
    pub params: Vec<Param>,
    /// Where the block starts.
    pub at: Location,
}

impl Block {
    /// The parameter `name`, if written.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.params.iter().find(|param| param.name == name).map(|param| &param.value)
    }

    /// The parameter `name`, which must be written.
    pub fn require(&self, name: &str) -> Result<&Node, DiskSimError> {
        self.get(name)
            .ok_or_else(|| self.at.error(format!("{} block lacks `{name}`", self.type_name)))
    }
}

/// `instantiate [ NAMES ] as TEMPLATE`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instantiate {
    /// The instances' names.
    pub names: Vec<String>,
    /// The block they copy.
    pub template: String,
    /// Where.
    pub at: Location,
}

/// One node of a `topology`: `TYPE NAME [ children ]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyNode {
    /// `disksim_iodriver`, `disksim_bus`, `disksim_ctlr`, `disksim_disk`...
    pub type_name: String,
    /// The instance.
    pub name: String,
    /// What hangs below it.
    pub children: Vec<TopologyNode>,
    /// Where.
    pub at: Location,
}

/// Everything a parameter file (and the files it sources) says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    /// Top-level blocks, in order.
    pub blocks: Vec<Block>,
    /// `instantiate` lines, in order.
    pub instantiations: Vec<Instantiate>,
    /// `topology` trees, in order.
    pub topologies: Vec<TopologyNode>,
}

impl Document {
    /// The top-level block named `name`.
    pub fn block(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|block| block.name.as_deref() == Some(name))
    }
}

/// The block types DiskSim 4.0 knows (its modules' `disksim_`/`dm_` names); any other type
/// is refused, as DiskSim refuses it.
pub const BLOCK_TYPES: &[&str] = &[
    "disksim_global",
    "disksim_stats",
    "disksim_iodriver_stats",
    "disksim_bus_stats",
    "disksim_ctlr_stats",
    "disksim_device_stats",
    "disksim_pf_stats",
    "disksim_iodriver",
    "disksim_ioqueue",
    "disksim_bus",
    "disksim_ctlr",
    "disksim_disk",
    "disksim_simpledisk",
    "disksim_logorg",
    "disksim_pf",
    "disksim_synthio",
    "disksim_synthgen",
    "disksim_syncset",
    "disksim_iosim",
    "disksim_iomap",
    "disksim_cachemem",
    "disksim_cachedev",
    "dm_disk",
    "dm_layout_g1",
    "dm_layout_g1_zone",
    "dm_layout_g2",
    "dm_layout_g2_zone",
    "dm_layout_g4",
    "dm_mech_g1",
    "memsmodel_mems",
    "ssdmodel_ssd",
];

/// How deep `source` may nest (a file sourcing itself is refused, not followed forever).
const SOURCE_DEPTH_LIMIT: usize = 16;

/// Reads a parameter file and every file it sources.
pub fn parse_file(path: &Path) -> Result<Document, DiskSimError> {
    parse_file_at(path, 0)
}

/// Parses `text` as if read from `path` (`source` lines are found relative to `path`'s
/// directory).
pub fn parse_text(path: &Path, text: &str) -> Result<Document, DiskSimError> {
    Parser::new(path, text, 0).document()
}

fn read(path: &Path, from: Option<&Location>) -> Result<String, DiskSimError> {
    std::fs::read_to_string(path).map_err(|error| match from {
        Some(at) => at.error(format!("cannot read sourced file {}: {error}", path.display())),
        None => DiskSimError { file: path.to_owned(), line: 0, problem: error.to_string() },
    })
}

fn parse_file_at(path: &Path, depth: usize) -> Result<Document, DiskSimError> {
    let text = read(path, None)?;
    Parser::new(path, &text, depth).document()
}

/// `name` relative to the directory of the file that wrote it.
pub fn relative_to(file: &Path, name: &str) -> PathBuf {
    let name = Path::new(name);
    if name.is_absolute() {
        return name.to_owned();
    }
    file.parent().map_or_else(|| name.to_owned(), |dir| dir.join(name))
}

/// Bytes that end a word.
fn is_delimiter(byte: u8) -> bool {
    byte.is_ascii_whitespace() || b",{}[]#=\"".contains(&byte)
}

struct Parser<'a> {
    bytes: &'a [u8],
    position: usize,
    line: usize,
    file: Arc<PathBuf>,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(path: &Path, text: &'a str, depth: usize) -> Parser<'a> {
        Parser {
            bytes: text.as_bytes(),
            position: 0,
            line: 1,
            file: Arc::new(path.to_owned()),
            depth,
        }
    }

    fn here(&self) -> Location {
        Location { file: Arc::clone(&self.file), line: self.line }
    }

    fn error(&self, problem: impl Into<String>) -> DiskSimError {
        self.here().error(problem)
    }

    /// Skips blanks, newlines and comments; the next byte, if any.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes.get(self.position) {
            match byte {
                b'\n' => {
                    self.line += 1;
                    self.position += 1;
                }
                b'#' => {
                    while self.bytes.get(self.position).is_some_and(|&b| b != b'\n') {
                        self.position += 1;
                    }
                }
                _ if byte.is_ascii_whitespace() => self.position += 1,
                _ => return Some(byte),
            }
        }
        None
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), DiskSimError> {
        match self.peek() {
            Some(found) if found == byte => {
                self.position += 1;
                Ok(())
            }
            Some(found) => Err(self
                .error(format!("expected {what}, found `{}`", char::from(found).escape_default()))),
            None => Err(self.error(format!("expected {what}, found the end of the file"))),
        }
    }

    /// A word (possibly empty when the next byte is a delimiter).
    fn word(&mut self) -> String {
        self.peek();
        let start = self.position;
        while self.bytes.get(self.position).is_some_and(|&byte| !is_delimiter(byte)) {
            self.position += 1;
        }
        String::from_utf8_lossy(&self.bytes[start..self.position]).into_owned()
    }

    fn required_word(&mut self, what: &str) -> Result<String, DiskSimError> {
        let word = self.word();
        if word.is_empty() {
            return Err(match self.peek() {
                Some(found) => self.error(format!(
                    "expected {what}, found `{}`",
                    char::from(found).escape_default()
                )),
                None => self.error(format!("expected {what}, found the end of the file")),
            });
        }
        Ok(word)
    }

    fn document(&mut self) -> Result<Document, DiskSimError> {
        let mut document = Document::default();
        while self.peek().is_some() {
            let at = self.here();
            let word = self.required_word("a block, `source`, `instantiate` or `topology`")?;
            match word.as_str() {
                "source" => {
                    let sourced = self.sourced_path(&at)?;
                    if self.depth >= SOURCE_DEPTH_LIMIT {
                        return Err(at.error("`source` nested too deep (a file sourcing itself?)"));
                    }
                    let text = read(&sourced, Some(&at))?;
                    let inner = Parser::new(&sourced, &text, self.depth + 1).document()?;
                    document.blocks.extend(inner.blocks);
                    document.instantiations.extend(inner.instantiations);
                    document.topologies.extend(inner.topologies);
                }
                "instantiate" => {
                    self.expect(b'[', "`[` after `instantiate`")?;
                    let names = self
                        .list_items("instantiate")?
                        .iter()
                        .map(|node| node.word("instantiate").map(str::to_owned))
                        .collect::<Result<Vec<_>, _>>()?;
                    let as_word = self.word();
                    if as_word != "as" {
                        return Err(self.error(format!(
                            "expected `as TEMPLATE` after `instantiate [ ... ]`, found `{as_word}`"
                        )));
                    }
                    let template = self.required_word("the template's name after `as`")?;
                    document.instantiations.push(Instantiate { names, template, at });
                }
                "topology" => {
                    let type_name = self.required_word("the topology root's type")?;
                    document.topologies.push(self.topology_node(type_name, at)?);
                }
                _ => {
                    // The type is a module, or a block defined earlier that this one
                    // specializes (its parameters, with this block's replacing them).
                    let base = document.block(&word).cloned();
                    if base.is_none() {
                        check_type(&word, &at)?;
                    }
                    let name = self.required_word(&format!("the name of the {word} block"))?;
                    self.expect(b'{', &format!("`{{` opening block {name}"))?;
                    let own = self.block_body()?;
                    let (type_name, params) = match base {
                        None => (word, own),
                        Some(base) => {
                            let mut params = base.params;
                            for param in own {
                                match params.iter_mut().find(|old| old.name == param.name) {
                                    Some(old) => *old = param,
                                    None => params.push(param),
                                }
                            }
                            (base.type_name, params)
                        }
                    };
                    document.blocks.push(Block { type_name, name: Some(name), params, at });
                }
            }
        }
        Ok(document)
    }

    fn sourced_path(&mut self, at: &Location) -> Result<PathBuf, DiskSimError> {
        let name = self.required_word("a file name after `source`")?;
        Ok(relative_to(&at.file, &name))
    }

    fn topology_node(
        &mut self,
        type_name: String,
        at: Location,
    ) -> Result<TopologyNode, DiskSimError> {
        if self.depth > SOURCE_DEPTH_LIMIT * 4 {
            return Err(at.error("topology nested too deep"));
        }
        let name = self.required_word(&format!("the name of the {type_name} instance"))?;
        self.expect(b'[', &format!("`[` after topology node {name}"))?;
        let mut children = Vec::new();
        loop {
            match self.peek() {
                Some(b']') => {
                    self.position += 1;
                    break;
                }
                Some(b',') => self.position += 1,
                _ => {
                    let child_at = self.here();
                    let child_type = self.required_word("a topology node `TYPE NAME [ ... ]`")?;
                    self.depth += 1;
                    let child = self.topology_node(child_type, child_at);
                    self.depth -= 1;
                    children.push(child?);
                }
            }
        }
        Ok(TopologyNode { type_name, name, children, at })
    }

    /// The parameters after `{`, through the closing `}`.
    fn block_body(&mut self) -> Result<Vec<Param>, DiskSimError> {
        let mut params: Vec<Param> = Vec::new();
        loop {
            match self.peek() {
                // As in DiskSim, a `,` must be followed by a parameter.
                Some(b'}') if params.is_empty() => {
                    self.position += 1;
                    return Ok(params);
                }
                Some(b'}') => {
                    return Err(self.error("expected a parameter after `,` (no `,` before `}`)"));
                }
                None => {
                    return Err(
                        self.error("expected `}` closing the block, found the end of the file")
                    );
                }
                _ => {}
            }
            let at = self.here();
            let name = self.param_name()?;
            if params.iter().any(|param| param.name == name) {
                return Err(at.error(format!("parameter `{name}` given twice")));
            }
            let value = self.value(&name)?;
            params.push(Param { name, value });
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    return Ok(params);
                }
                Some(found) => {
                    return Err(self.error(format!(
                        "expected `,` or `}}` after parameter `{}`, found `{}`",
                        params.last().map_or("", |param| param.name.as_str()),
                        char::from(found).escape_default()
                    )));
                }
                None => {
                    return Err(
                        self.error("expected `}` closing the block, found the end of the file")
                    );
                }
            }
        }
    }

    /// `Name with spaces` up to its `=` (consumed), on one line.
    fn param_name(&mut self) -> Result<String, DiskSimError> {
        self.peek();
        let start = self.position;
        loop {
            match self.bytes.get(self.position) {
                Some(b'=') => break,
                Some(&byte) if b"\n{}[],#\"".contains(&byte) => {
                    let seen = String::from_utf8_lossy(&self.bytes[start..self.position]);
                    return Err(
                        self.error(format!("expected `NAME = value`, found `{}`", seen.trim()))
                    );
                }
                Some(_) => self.position += 1,
                None => {
                    return Err(self.error("expected `NAME = value`, found the end of the file"));
                }
            }
        }
        let raw = String::from_utf8_lossy(&self.bytes[start..self.position]);
        self.position += 1;
        let name = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if name.is_empty() {
            return Err(self.error("expected a parameter name before `=`"));
        }
        Ok(name)
    }

    /// The items of a list after its `[`, through the `]`. `NAME3 .. NAME6` stands for
    /// `NAME3, NAME4, NAME5, NAME6` (DiskSim's range notation). As in DiskSim, a `,` must be
    /// followed by an item.
    fn list_items(&mut self, name: &str) -> Result<Vec<Node>, DiskSimError> {
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(items);
        }
        loop {
            if self.peek() == Some(b']') {
                return Err(
                    self.error(format!("expected an item after `,` in the list of `{name}`"))
                );
            }
            let at = self.here();
            let (position, line) = (self.position, self.line);
            let first = self.word();
            let is_range = !first.is_empty() && {
                let (after, after_line) = (self.position, self.line);
                let dots = self.word();
                self.position = after;
                self.line = after_line;
                dots == ".."
            };
            if is_range {
                self.word();
                let last = self.required_word("the end of a `..` range")?;
                for expanded in expand_range(&first, &last, &at)? {
                    items.push(Node { value: Value::Word(expanded), at: at.clone() });
                }
            } else {
                self.position = position;
                self.line = line;
                self.depth += 1;
                let item = self.value(name);
                self.depth -= 1;
                items.push(item?);
            }
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(items);
                }
                Some(found) => {
                    return Err(self.error(format!(
                        "expected `,` or `]` in the list of `{name}`, found `{}`",
                        char::from(found).escape_default()
                    )));
                }
                None => {
                    return Err(self.error(format!(
                        "expected `]` closing the list of `{name}`, found the end of the file"
                    )));
                }
            }
        }
    }

    fn value(&mut self, name: &str) -> Result<Node, DiskSimError> {
        if self.depth > SOURCE_DEPTH_LIMIT * 4 {
            return Err(self.error("values nested too deep"));
        }
        let next = self.peek();
        let at = self.here();
        let value = match next {
            Some(b'[') => {
                self.position += 1;
                Value::List(self.list_items(name)?)
            }
            Some(b'"') => {
                self.position += 1;
                let start = self.position;
                while self.bytes.get(self.position).is_some_and(|&b| b != b'"' && b != b'\n') {
                    self.position += 1;
                }
                if self.bytes.get(self.position) != Some(&b'"') {
                    return Err(self.error(format!("unterminated string in `{name}`")));
                }
                let text = String::from_utf8_lossy(&self.bytes[start..self.position]).into_owned();
                self.position += 1;
                Value::Word(text)
            }
            Some(byte) if !is_delimiter(byte) => {
                let word = self.word();
                if word == "source" {
                    let sourced = self.sourced_path(&at)?;
                    if self.depth >= SOURCE_DEPTH_LIMIT {
                        return Err(at.error("`source` nested too deep (a file sourcing itself?)"));
                    }
                    let text = read(&sourced, Some(&at))?;
                    let mut inner = Parser::new(&sourced, &text, self.depth + 1);
                    let node = inner.value(name)?;
                    if inner.peek().is_some() {
                        return Err(inner.error(format!(
                            "expected the end of the file after the value of `{name}`"
                        )));
                    }
                    return Ok(node);
                }
                self.after_word(word, &at)?
            }
            Some(found) => {
                return Err(self.error(format!(
                    "expected a value for `{name}`, found `{}`",
                    char::from(found).escape_default()
                )));
            }
            None => {
                return Err(
                    self.error(format!("expected a value for `{name}`, found the end of the file"))
                );
            }
        };
        Ok(Node { value, at })
    }

    /// A word: a block's type (`TYPE { ... }`, `TYPE NAME { ... }`), a number or a name.
    fn after_word(&mut self, word: String, at: &Location) -> Result<Value, DiskSimError> {
        let block = |parser: &mut Parser<'_>, name: Option<String>| {
            check_type(&word, at)?;
            parser.expect(b'{', "`{`")?;
            parser.depth += 1;
            let params = parser.block_body();
            parser.depth -= 1;
            Ok(Value::Block(Block {
                type_name: word.clone(),
                name,
                params: params?,
                at: at.clone(),
            }))
        };
        match self.peek() {
            Some(b'{') => return block(self, None),
            Some(byte) if !is_delimiter(byte) => {
                // `TYPE NAME {`: look past the second word without consuming it otherwise.
                let (position, line) = (self.position, self.line);
                let name = self.word();
                if self.peek() == Some(b'{') {
                    return block(self, Some(name));
                }
                self.position = position;
                self.line = line;
                return Err(self.error(format!("expected `,` after `{word}`, found `{name}`")));
            }
            _ => {}
        }
        if let Ok(number) = word.parse::<i64>() {
            return Ok(Value::Integer(number));
        }
        if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
            return i64::from_str_radix(hex, 16)
                .map(Value::Integer)
                .map_err(|_| at.error(format!("`{word}` is not a hexadecimal number")));
        }
        let starts_numeric = word
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'-' || b == b'+' || b == b'.');
        if starts_numeric {
            return match word.parse::<f64>() {
                Ok(number) if number.is_finite() => Ok(Value::Real(number)),
                _ => Err(at.error(format!("`{word}` is not a number"))),
            };
        }
        Ok(Value::Word(word))
    }
}

/// The most names one `..` range may stand for (a typo must not allocate gigabytes).
const RANGE_LIMIT: i64 = 100_000;

/// `disk3 .. disk6` -> `disk3, disk4, disk5, disk6`: the same prefix, trailing numbers
/// ascending.
fn expand_range(first: &str, last: &str, at: &Location) -> Result<Vec<String>, DiskSimError> {
    let split = |word: &str| {
        let digits = word.len() - word.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, number) = word.split_at(word.len() - digits);
        number.parse::<i64>().ok().map(|number| (prefix.to_owned(), number))
    };
    let bad = || at.error(format!("bad range `{first} .. {last}` (expected NAME1 .. NAME9)"));
    let ((prefix, from), (last_prefix, to)) =
        (split(first).ok_or_else(bad)?, split(last).ok_or_else(bad)?);
    if prefix != last_prefix || to < from || to - from >= RANGE_LIMIT {
        return Err(bad());
    }
    Ok((from..=to).map(|number| format!("{prefix}{number}")).collect())
}

fn check_type(word: &str, at: &Location) -> Result<(), DiskSimError> {
    if BLOCK_TYPES.contains(&word) {
        Ok(())
    } else {
        Err(at.error(format!(
            "unknown block type `{word}` (DiskSim 4.0 knows: {})",
            BLOCK_TYPES.join(", ")
        )))
    }
}

/// An extracted seek curve: `(distance in cylinders, time in ms)`, as the file lists them.
#[derive(Clone, Debug, PartialEq)]
pub struct SeekCurve {
    /// The points, in file order.
    pub points: Vec<(u64, f64)>,
}

/// Reads a `.seek` file: `Seek distances measured: N`, then N lines `DISTANCE, MS` (a third
/// and fourth column, as some drives' files carry — a deviation and a count — are read
/// past). The count must match; distances must ascend.
pub fn parse_seek_file(path: &Path, from: &Location) -> Result<SeekCurve, DiskSimError> {
    let text = read(path, Some(from))?;
    parse_seek_text(path, &text)
}

/// [`parse_seek_file`] on text already read.
pub fn parse_seek_text(path: &Path, text: &str) -> Result<SeekCurve, DiskSimError> {
    let error =
        |line: usize, problem: String| DiskSimError { file: path.to_owned(), line, problem };
    let mut lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
    let count = loop {
        let Some((number, line)) = lines.next() else {
            return Err(error(
                1,
                "expected `Seek distances measured: N`, found the end of the file".into(),
            ));
        };
        if line.trim().is_empty() {
            continue;
        }
        let count = line
            .trim()
            .strip_prefix("Seek distances measured:")
            .and_then(|rest| rest.trim().parse::<usize>().ok());
        match count {
            Some(count) => break count,
            None => {
                return Err(error(
                    number,
                    format!("expected `Seek distances measured: N`, found `{}`", line.trim()),
                ));
            }
        }
    };
    let mut points: Vec<(u64, f64)> = Vec::new();
    let mut last_line = 1;
    for (number, line) in lines {
        last_line = number;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let columns: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(2..=4).contains(&columns.len()) {
            return Err(error(number, format!("expected `DISTANCE, MS`, found `{line}`")));
        }
        let distance = columns[0].parse::<u64>().map_err(|_| {
            error(number, format!("seek distance `{}` is not a whole number", columns[0]))
        })?;
        let time_ms = columns[1]
            .parse::<f64>()
            .ok()
            .filter(|time| time.is_finite() && *time >= 0.0)
            .ok_or_else(|| {
                error(number, format!("seek time `{}` is not a number of ms", columns[1]))
            })?;
        for extra in &columns[2..] {
            if extra.parse::<f64>().is_err() {
                return Err(error(number, format!("column `{extra}` is not a number")));
            }
        }
        if points.last().is_some_and(|&(last, _)| distance <= last) {
            return Err(error(number, format!("seek distance {distance} does not ascend")));
        }
        points.push((distance, time_ms));
    }
    if points.len() != count {
        return Err(error(
            last_line,
            format!(
                "the header says {count} seek distances were measured, the file lists {}",
                points.len()
            ),
        ));
    }
    Ok(SeekCurve { points })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Document, DiskSimError> {
        parse_text(Path::new("/nonexistent/t.parv"), text)
    }

    // Proves parameter names keep their spaces, dots, parentheses, slashes and hyphens (blank
    // runs collapsed), and values of every form are read: integers, reals, words, nested
    // lists, anonymous and named blocks.
    #[test]
    fn names_and_values() {
        let document = parse(
            "# comment\ndisksim_disk D-1.x {\n  Segment size  (in blks) = 561,\n\
             Read hit over. after read = 0.066, Timeout time/weight = -6,\n\
             Seek type = extracted,\n  L = [ 1, [ 2.5e1 ], disksim_ioqueue { A = 1 } ],\n\
             M = dm_disk Named.model { }\n}\n",
        )
        .unwrap();
        let block = document.block("D-1.x").unwrap();
        assert_eq!(block.require("Segment size (in blks)").unwrap().value, Value::Integer(561));
        assert_eq!(block.get("Read hit over. after read").unwrap().value, Value::Real(0.066));
        assert_eq!(block.get("Timeout time/weight").unwrap().value, Value::Integer(-6));
        assert_eq!(block.get("Seek type").unwrap().value, Value::Word("extracted".into()));
        let list = block.get("L").unwrap().list("L").unwrap();
        assert_eq!(list[1].list("L").unwrap()[0].value, Value::Real(25.0));
        assert_eq!(list[2].block("L").unwrap().type_name, "disksim_ioqueue");
        assert_eq!(list[2].at.line, 6);
        let named = block.get("M").unwrap().block("M").unwrap();
        assert_eq!(named.name.as_deref(), Some("Named.model"));
    }

    // Proves `instantiate` and nested `topology` nodes are read with their names.
    #[test]
    fn instantiate_and_topology() {
        let document = parse(
            "instantiate [ a, b ] as T\ntopology disksim_bus b0 [ disksim_disk a [] \
             disksim_disk b [ ] ]\n",
        )
        .unwrap();
        assert_eq!(document.instantiations[0].names, ["a", "b"]);
        assert_eq!(document.instantiations[0].template, "T");
        let root = &document.topologies[0];
        assert_eq!(root.children.len(), 2);
        assert_eq!(root.children[1].name, "b");
    }

    // Proves DiskSim's `..` ranges (in lists and `instantiate`), hexadecimal integers and
    // blocks specializing an earlier block are read as DiskSim reads them.
    #[test]
    fn ranges_hex_and_specialization() {
        let document = parse(
            "disksim_bus B { A = 0x1f, L = [ x, d8 .. d11, y ] }\n\
             B B2 { L = [ ], C = 2 }\ninstantiate [ disk0 .. disk2 ] as B2\n",
        )
        .unwrap();
        let base = document.block("B").unwrap();
        assert_eq!(base.get("A").unwrap().value, Value::Integer(31));
        let names: Vec<&str> = base
            .get("L")
            .unwrap()
            .list("L")
            .unwrap()
            .iter()
            .map(|n| n.word("L").unwrap())
            .collect();
        assert_eq!(names, ["x", "d8", "d9", "d10", "d11", "y"]);
        let special = document.block("B2").unwrap();
        assert_eq!(special.type_name, "disksim_bus");
        assert_eq!(special.get("A").unwrap().value, Value::Integer(31));
        assert_eq!(special.get("L").unwrap().value, Value::List(Vec::new()));
        assert_eq!(special.get("C").unwrap().value, Value::Integer(2));
        assert_eq!(document.instantiations[0].names, ["disk0", "disk1", "disk2"]);
    }

    // Proves each kind of malformed text is refused at its line with what was expected.
    #[test]
    fn errors_name_line_and_expectation() {
        let cases = [
            ("disksim_disk D {\n A = 1\n B = 2 }", 3, "expected `,` after `1`"),
            ("disksim_disk D {\n A = 1 ]", 2, "expected `,` or `}`"),
            ("disksim_disk D {\n A = [ 1, 2 \n}", 3, "expected `,` or `]`"),
            ("disksim_disk D {\n A = \n}", 3, "expected a value for `A`"),
            ("disksim_disk D {\n A = 1,\n A = 2 }", 3, "given twice"),
            ("\n\nnot_a_type D { }", 3, "unknown block type `not_a_type`"),
            ("instantiate [ a ] like T", 1, "expected `as TEMPLATE`"),
            ("disksim_disk D {\n A = 1e999 }", 2, "is not a number"),
            ("disksim_disk D {\n A = \"open\n }", 2, "unterminated string"),
            ("disksim_disk D {\n no equals here\n }", 2, "expected `NAME = value`"),
            ("source\n", 2, "expected a file name"),
            ("disksim_disk D {\n A = 1,\n}", 3, "no `,` before `}`"),
            ("disksim_disk D { A = [ 1, ] }", 1, "expected an item after `,`"),
            ("instantiate [ d3 .. e5 ] as T", 1, "bad range"),
            ("instantiate [ d5 .. d3 ] as T", 1, "bad range"),
            ("disksim_disk D { A = 0xZZ }", 1, "not a hexadecimal number"),
        ];
        for (text, line, expected) in cases {
            let error = parse(text).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.problem.contains(expected), "{text:?}: {error}");
            assert_eq!(error.file, Path::new("/nonexistent/t.parv"));
        }
    }
}
