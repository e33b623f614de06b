//! Free text that users give things (token labels, metadata), and how it is shown back.
//!
//! Such text ends up on terminals (`weft audit`, `weft meta ls`) and in web pages. A newline
//! in it forges a second line of a listing; an ESC starts a terminal control sequence (that
//! clears the screen or retitles the window). So control characters are refused where the
//! text is set, and escaped where it is shown, for what a catalog already holds.

use crate::error::Error;
use std::borrow::Cow;

/// Longest token label, in bytes.
pub const MAX_LABEL_LEN: usize = 256;

/// Checks the free text `s` (named `what` in the error) given for a label or a value: at most
/// `max` bytes, and no control character (C0, DEL, C1); a tab only where `tab`.
pub fn check_text(what: &str, s: &str, max: usize, tab: bool) -> Result<(), Error> {
    if s.len() > max {
        return Err(Error::invalid(format!(
            "{what} is {} bytes long; the limit is {max}",
            s.len()
        )));
    }
    if let Some(c) = s.chars().find(|&c| c.is_control() && !(tab && c == '\t')) {
        return Err(Error::invalid(format!(
            "{what} contains the control character {}; {what}s are one line of printable text",
            c.escape_unicode()
        )));
    }
    Ok(())
}

/// Cuts `s` to at most `max` bytes, at a character boundary.
pub fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

/// `s` with its control characters written as escapes (`\n`, `\t`, `\u{1b}`) and its
/// backslashes doubled when it has any, so that an escape cannot be mistaken for text;
/// unchanged (and not copied) otherwise.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn truncation_keeps_whole_characters() {
        let mut s = "aé".to_owned(); // 'é' is two bytes
        truncate(&mut s, 2);
        assert_eq!(s, "a");
        let mut s = "abc".to_owned();
        truncate(&mut s, 5);
        assert_eq!(s, "abc");
    }

    #[test]
    fn control_characters_are_refused_and_lengths_bounded() {
        check_text("label", "my laptop (ünïcode)", MAX_LABEL_LEN, false).unwrap();
        check_text("value", "a\tb", 10, true).unwrap();
        for bad in [
            "a\nb",
            "\x1b[2J",
            "\r",
            "\0",
            "\u{7f}",
            "\u{85}",
            "\u{9b}31m",
            "a\tb",
        ] {
            let e = check_text("label", bad, MAX_LABEL_LEN, false).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
            assert!(e.message.contains("control character"), "{}", e.message);
        }
        assert!(check_text("value", "a\nb", 10, true).is_err());
        let e = check_text("label", &"x".repeat(257), MAX_LABEL_LEN, false).unwrap_err();
        assert!(e.message.contains("the limit is 256"), "{}", e.message);
    }

    #[test]
    fn controls_are_escaped_for_display() {
        assert!(matches!(escape_controls("plain \\ text"), Cow::Borrowed(_)));
        assert_eq!(escape_controls("a\nb"), "a\\nb");
        assert_eq!(escape_controls("\x1b[2J\\n"), "\\u{1b}[2J\\\\n");
        assert_eq!(escape_controls("\u{9b}\u{7f}\t"), "\\u{9b}\\u{7f}\\t");
    }
}
