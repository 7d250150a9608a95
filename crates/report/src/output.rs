//! Where a rendered report goes: the format a command was asked for or its output file's
//! extension implies, written to that file or to the caller's stream.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::model::Report;
use crate::render::{Format, render};

impl Format {
    /// The format to write: `asked` if given, else the one `output`'s extension names
    /// (`.json`, `.csv`, `.svg`, `.html`), else a table. A command's `--format` wins over its
    /// `-o` file name. An extension no format has also gives a table; commands use
    /// [`Format::try_resolve`], which refuses it.
    pub fn resolve(asked: Option<Format>, output: Option<&Path>) -> Format {
        Format::try_resolve(asked, output).unwrap_or(Format::Table)
    }

    /// As [`Format::resolve`], but an `output` whose extension names no format (`out.png`) is
    /// an error naming the file and the accepted extensions. No extension, and `.txt`, mean a
    /// table.
    pub fn try_resolve(
        asked: Option<Format>,
        output: Option<&Path>,
    ) -> Result<Format, UnknownExtension> {
        if let Some(format) = asked {
            return Ok(format);
        }
        let Some(path) = output else { return Ok(Format::Table) };
        let Some(extension) = path.extension() else { return Ok(Format::Table) };
        match extension.to_str().map(str::to_ascii_lowercase).as_deref() {
            Some("json") => Ok(Format::Json),
            Some("csv") => Ok(Format::Csv),
            Some("svg") => Ok(Format::Svg),
            Some("html" | "htm") => Ok(Format::Html),
            Some("txt") => Ok(Format::Table),
            _ => Err(UnknownExtension { path: path.to_owned() }),
        }
    }
}

/// An output file whose extension names no report format.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: unknown output extension (accepted: .json, .csv, .svg, .html, .txt or none for a \
     table)",
    path.display()
)]
pub struct UnknownExtension {
    /// The file as given.
    pub path: PathBuf,
}

/// A report that could not be written. Neither kind is worth retrying as is: the file's
/// directory or the reader at the other end of the stream has to change first.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output file could not be created or written.
    #[error("writing {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The stream (stdout) refused the report, for example because its reader went away.
    #[error("writing the report")]
    Stream(#[source] io::Error),
}

impl WriteError {
    /// Whether the reader of the stream went away (`elevator ... | head`), which a command
    /// line tool counts as success.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            WriteError::Stream(error) => error.kind() == io::ErrorKind::BrokenPipe,
            WriteError::File { .. } => false,
        }
    }
}

/// Writes `report` as `format` to the file `output`, or to `stream` when there is none.
pub fn write_report(
    report: &Report,
    format: Format,
    output: Option<&Path>,
    stream: &mut dyn Write,
) -> Result<(), WriteError> {
    let Some(path) = output else {
        return render(report, format, stream).map_err(WriteError::Stream);
    };
    let file_error = |source| WriteError::File { path: path.to_owned(), source };
    let mut out = BufWriter::new(File::create(path).map_err(file_error)?);
    render(report, format, &mut out).map_err(file_error)?;
    out.flush().map_err(file_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves --format wins, then the file's extension, then the table default.
    #[test]
    fn the_format_comes_from_the_request_then_the_file_name() {
        let json = Some(Path::new("out.json"));
        assert_eq!(Format::resolve(Some(Format::Csv), json), Format::Csv);
        assert_eq!(Format::resolve(None, json), Format::Json);
        assert_eq!(Format::resolve(None, Some(Path::new("out.csv"))), Format::Csv);
        assert_eq!(Format::resolve(None, Some(Path::new("out.txt"))), Format::Table);
        assert_eq!(Format::resolve(None, None), Format::Table);
        assert_eq!(Format::resolve(None, Some(Path::new("out.svg"))), Format::Svg);
        assert_eq!(Format::resolve(None, Some(Path::new("out.HTML"))), Format::Html);
        assert_eq!(Format::resolve(None, Some(Path::new("out"))), Format::Table);
    }

    // Proves an extension no format has is refused, naming the file and the accepted ones,
    // unless --format says what to write.
    #[test]
    fn an_unknown_extension_is_refused() {
        let png = Some(Path::new("dir/out.png"));
        let error = Format::try_resolve(None, png).unwrap_err().to_string();
        assert!(error.contains("dir/out.png"), "{error}");
        assert!(error.contains(".json, .csv, .svg, .html, .txt"), "{error}");
        assert_eq!(Format::try_resolve(Some(Format::Json), png).unwrap(), Format::Json);
        assert_eq!(Format::try_resolve(None, Some(Path::new("r.txt"))).unwrap(), Format::Table);
    }

    // Proves a file that cannot be created is named in the error, and the report goes to the
    // file, not to the stream, when one is given.
    #[test]
    fn reports_go_to_the_file_or_say_which_file_failed() {
        let report = Report::new(7, "0.0.0");
        let dir = std::env::temp_dir().join(format!("elevator-report-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        let mut stream = Vec::new();
        write_report(&report, Format::Json, Some(&path), &mut stream).unwrap();
        assert!(stream.is_empty());
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"seed\": 7"));
        let missing = dir.join("no-such-dir").join("r.json");
        let error = write_report(&report, Format::Json, Some(&missing), &mut stream).unwrap_err();
        assert!(error.to_string().contains("no-such-dir"), "{error}");
        assert!(!error.is_broken_pipe());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
