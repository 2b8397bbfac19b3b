//! The paths a file names: the leaves of its `use` trees (and whether each is a
//! re-export), and the paths written in its code.

use super::lex::Token;

/// One leaf of a `use` tree: the path it names and the name it binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseLeaf {
    pub path: Vec<String>,
    /// The bound name (`as` alias or last segment); `*` for a glob.
    pub name: String,
    /// A `pub` (any visibility) use: the file re-exports it.
    pub reexport: bool,
}

/// What a file names.
#[derive(Clone, Debug, Default)]
pub struct Named {
    pub uses: Vec<UseLeaf>,
    /// Paths of two or more segments written outside `use` items.
    pub paths: Vec<Vec<String>>,
}

/// The uses and paths of a file's tokens.
pub fn named(tokens: &[Token]) -> Named {
    let mut named = Named::default();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == word("use") && (i == 0 || tokens[i - 1] != Token::PathSep) {
            let reexport = is_public(tokens, i);
            let mut j = i + 1;
            if tokens.get(j) == Some(&Token::PathSep) {
                j += 1;
            }
            let mut leaves = Vec::new();
            j = use_tree(tokens, j, &[], &mut leaves);
            named.uses.extend(leaves.into_iter().map(|(path, name)| UseLeaf { path, name, reexport }));
            i = j.max(i + 1);
            continue;
        }
        if let Token::Word(first) = &tokens[i] {
            let follows_path = i > 0 && tokens[i - 1] == Token::PathSep;
            if !follows_path && tokens.get(i + 1) == Some(&Token::PathSep) {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep) {
                    match tokens.get(j + 1) {
                        Some(Token::Word(next)) => path.push(next.clone()),
                        _ => break,
                    }
                    j += 2;
                }
                if path.len() >= 2 {
                    named.paths.push(path);
                }
                i = j;
                continue;
            }
        }
        i += 1;
    }
    named
}

fn word(text: &str) -> Token {
    Token::Word(text.to_string())
}

/// Whether the `use` at `at` carries a visibility (`pub`, `pub(crate)`, `pub(super)`...).
fn is_public(tokens: &[Token], at: usize) -> bool {
    if at == 0 {
        return false;
    }
    if tokens[at - 1] == word("pub") {
        return true;
    }
    if tokens[at - 1] != Token::Punct(')') {
        return false;
    }
    let open = tokens[..at - 1].iter().rposition(|t| *t == Token::Punct('('));
    open.is_some_and(|open| open > 0 && tokens[open - 1] == word("pub"))
}

/// Parses one use tree at `at` under `prefix`, pushing its leaves; returns the index after it.
fn use_tree(tokens: &[Token], mut at: usize, prefix: &[String], leaves: &mut Vec<(Vec<String>, String)>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(at) {
            Some(Token::Word(segment)) => {
                path.push(segment.clone());
                at += 1;
            }
            Some(Token::Punct('*')) => {
                leaves.push((path, "*".to_string()));
                return at + 1;
            }
            Some(Token::Punct('{')) => return group(tokens, at + 1, &path, leaves),
            _ => return at,
        }
        if tokens.get(at) == Some(&Token::PathSep) {
            at += 1;
            continue;
        }
        break;
    }
    if path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    let mut name = path.last().cloned().unwrap_or_default();
    if tokens.get(at) == Some(&word("as")) {
        if let Some(Token::Word(alias)) = tokens.get(at + 1) {
            name = alias.clone();
        }
        at += 2;
    }
    leaves.push((path, name));
    at
}

/// A `{ tree, tree, ... }` group from just past its `{`.
fn group(tokens: &[Token], mut at: usize, prefix: &[String], leaves: &mut Vec<(Vec<String>, String)>) -> usize {
    while at < tokens.len() {
        match tokens[at] {
            Token::Punct('}') => return at + 1,
            Token::Punct(',') => at += 1,
            _ => {
                let next = use_tree(tokens, at, prefix, leaves);
                at = if next == at { at + 1 } else { next };
            }
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::super::lex::tokens;
    use super::*;

    fn leaves(code: &str) -> Vec<(String, String, bool)> {
        named(&tokens(code)).uses.into_iter().map(|leaf| (leaf.path.join("::"), leaf.name, leaf.reexport)).collect()
    }

    #[test]
    fn use_trees_give_every_leaf() {
        let found = leaves("use super::{drain::{A, B as C}, select::*, self as s};\npub(crate) use path::{self, D};");
        let expected = [
            ("super::drain::A", "A", false),
            ("super::drain::B", "C", false),
            ("super::select", "*", false),
            ("super", "s", false),
            ("path", "path", true),
            ("path::D", "D", true),
        ];
        let expected: Vec<(String, String, bool)> =
            expected.iter().map(|(p, n, r)| (p.to_string(), n.to_string(), *r)).collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn code_paths_start_at_their_first_segment() {
        let found = named(&tokens("fn f() { crate::pcp::drain(x); let y = a.b::<T>(); super::g(); }")).paths;
        assert_eq!(found, [vec!["crate", "pcp", "drain"], vec!["super", "g"]]);
    }
}
