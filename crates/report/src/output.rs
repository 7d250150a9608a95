//! Where a rendered report goes: the format a command was asked for or its output file's
//! extension implies, written to that file or to the caller's stream.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::model::Report;
use crate::render::{Format, render};

impl Format {
    /// The format to write: `asked` if given, else the one `output`'s extension names
    /// (`.json`, `.csv`), else a table. A command's `--format` wins over its `-o` file name.
    pub fn resolve(asked: Option<Format>, output: Option<&Path>) -> Format {
        if let Some(format) = asked {
            return format;
        }
        match output.and_then(|path| path.extension()).and_then(|extension| extension.to_str()) {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            _ => Format::Table,
        }
    }
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
