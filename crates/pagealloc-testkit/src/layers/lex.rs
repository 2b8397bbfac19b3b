//! Rust source reduced to the tokens a path is made of: comments, string and character
//! literals are dropped, and the code of test modules is cut off.

/// One token of a path or a use tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// An identifier or keyword (`crate`, `super`, `use`, `pub`, `as`, a name).
    Word(String),
    /// `::`
    PathSep,
    /// `{`, `}`, `,`, `;`, `*`, `(`, `)`: the punctuation a use tree or visibility has.
    Punct(char),
    /// Anything else (operators, numbers, literals): it ends a path.
    Other,
}

/// The code of `text` before its inline test module (`#[cfg(test)]`, or a `cfg` naming
/// `test` among others, then `mod name {`),
/// which may reach anywhere. A test module in a file of its own (`mod tests;`) is a file
/// the tree leaves out.
pub fn without_test_module(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(") {
        let start = from + at;
        let Some(close) = text[start..].find(']') else { break };
        let condition = &text[start..start + close];
        let is_test = condition.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "test");
        let rest = text[start + close + 1..].trim_start();
        if !is_test {
            from = start + 1;
            continue;
        }
        let unscoped = match rest.strip_prefix("pub(") {
            Some(scoped) => scoped.split_once(')').map_or(rest, |(_, after)| after.trim_start()),
            None => rest.strip_prefix("pub ").unwrap_or(rest),
        };
        let declaration = unscoped.strip_prefix("mod ");
        let inline = declaration.is_some_and(|after| {
            let name_end = after.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(after.len());
            after[name_end..].trim_start().starts_with('{')
        });
        if inline {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

/// The tokens of `code`, with comments and literals gone.
pub fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            i = skip_line(&chars, i);
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i = skip_block_comment(&chars, i);
        } else if c == '"' {
            i = skip_string(&chars, i + 1);
            out.push(Token::Other);
        } else if c == 'r' && raw_string_hashes(&chars, i).is_some() {
            i = skip_raw_string(&chars, i);
            out.push(Token::Other);
        } else if c == 'b' && chars.get(i + 1) == Some(&'"') {
            i = skip_string(&chars, i + 2);
            out.push(Token::Other);
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i);
            out.push(Token::Other);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::PathSep);
            i += 2;
        } else if "{},;*()".contains(c) {
            out.push(Token::Punct(c));
            i += 1;
        } else {
            out.push(Token::Other);
            i += 1;
        }
    }
    out
}

fn skip_line(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != '\n' {
        i += 1;
    }
    i
}

/// Block comments nest in Rust.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// From just past the opening quote to just past the closing one.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"`, `r#"`, `br"` ... at `i` (the `r`): the number of hashes.
fn raw_string_hashes(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') && chars[i - 1] != 'b' {
        return None;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(j - i - 1)
}

fn skip_raw_string(chars: &[char], i: usize) -> usize {
    let hashes = raw_string_hashes(chars, i).unwrap_or(0);
    let mut j = i + 2 + hashes;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return j + 1 + hashes;
        }
        j += 1;
    }
    j
}

/// A character literal (`'x'`, `'\n'`, `'\''`) or a lifetime (`'a`).
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if chars.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    // A lifetime: its name is skipped with it.
    let mut j = i + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(code: &str) -> Vec<String> {
        tokens(code)
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_strings_and_chars_hide_their_words() {
        let code = "a // crate::x\n/* b /* nested */ c */ d \"e::f\" r#\"g\"# 'h' '\\'' fn k<'l>()";
        assert_eq!(words(code), ["a", "d", "fn", "k"]);
    }

    #[test]
    fn the_test_module_is_cut_but_not_a_test_only_item() {
        let text =
            "use a;\n#[cfg(test)]\nmod rng;\n#[cfg(test)]\nuse b;\n#[cfg(test)]\npub(super) mod tests { use c; }";
        assert_eq!(without_test_module(text), "use a;\n#[cfg(test)]\nmod rng;\n#[cfg(test)]\nuse b;\n");
    }
}
