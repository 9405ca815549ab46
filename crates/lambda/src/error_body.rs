//! The error body every HTTP door of Tally answers with (the query
//! function's API, the console): `{"error": {"code", "message"}}`. Each
//! door keeps its own error type and its one mapping to a response; this
//! is only the shape they write.

use serde::Serialize;

/// An error as Tally's APIs write it: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody<'a> {
    /// The error.
    pub error: ErrorDetail<'a>,
}

/// The code and text of an [`ErrorBody`].
#[derive(Debug, Clone, Serialize)]
pub struct ErrorDetail<'a> {
    /// The machine code.
    pub code: &'a str,
    /// The text.
    pub message: &'a str,
}

impl<'a> ErrorBody<'a> {
    /// The body of an error with this code and text.
    pub fn new(code: &'a str, message: &'a str) -> Self {
        Self {
            error: ErrorDetail { code, message },
        }
    }
}
