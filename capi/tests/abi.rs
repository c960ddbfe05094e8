//! The C ABI against the last release's: every declaration of
//! `include/terroir.h` is compared with `abi/terroir.abi` (checked in: the
//! header's functions, structs, enums and typedefs, normalised, of the
//! release the ABI version names). Within one ABI (the same major version;
//! before 1.0 the same `0.minor`) a release may only add: functions, enum
//! values, typedefs, and fields at the end of a struct that starts with a
//! `size` field. A removed or changed declaration fails this test unless
//! the package version names another ABI.
//!
//! New declarations fail too, until `abi/terroir.abi` lists them:
//! `scripts/check-abi.sh --write` (or `TERROIR_ABI_WRITE=1 cargo test -p
//! terroir-capi --test abi`) rewrites it from the header. The exported
//! symbols of the built library are checked by `scripts/check-abi.sh`
//! against `abi/symbols.txt`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// One declaration of the header, normalised.
#[derive(Clone, Debug, PartialEq)]
enum Decl {
    /// A function: its signature with parameter names dropped.
    Function(String),
    /// A struct: its fields (type and name).
    Struct(Vec<String>),
    /// An enum: its values.
    Enum(Vec<String>),
    /// Any other typedef (opaque structs, function pointers).
    Typedef(String),
}

impl Decl {
    fn kind(&self) -> &'static str {
        match self {
            Decl::Function(_) => "fn",
            Decl::Struct(_) => "struct",
            Decl::Enum(_) => "enum",
            Decl::Typedef(_) => "typedef",
        }
    }

    fn body(&self) -> String {
        match self {
            Decl::Function(s) | Decl::Typedef(s) => s.clone(),
            Decl::Struct(v) | Decl::Enum(v) => v.join("; "),
        }
    }

    fn parse(kind: &str, body: &str) -> Option<Decl> {
        let list = || body.split("; ").map(str::to_owned).collect();
        Some(match kind {
            "fn" => Decl::Function(body.to_owned()),
            "struct" => Decl::Struct(list()),
            "enum" => Decl::Enum(list()),
            "typedef" => Decl::Typedef(body.to_owned()),
            _ => return None,
        })
    }

    /// Whether a library with `self` runs programs built against `old`.
    fn extends(&self, old: &Decl) -> bool {
        match (old, self) {
            // Fields may be added at the end of a struct that says its size.
            (Decl::Struct(o), Decl::Struct(n)) => {
                o == n || (o.first().is_some_and(|f| f == "size_t size") && n.starts_with(o))
            }
            // Values may be added; none may change.
            (Decl::Enum(o), Decl::Enum(n)) => o.iter().all(|v| n.contains(v)),
            (o, n) => o == n,
        }
    }
}

fn squeeze(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" *", "*")
        .replace("* ", "*")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
}

/// A parameter without its name: `terroir_pool *pool` is `terroir_pool*`.
fn param_type(p: &str) -> String {
    let p = squeeze(p);
    if p == "void" || p == "..." || p.contains('(') {
        return p;
    }
    let cut = p
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    if cut == 0 {
        return p; // a type alone
    }
    p[..cut].trim_end().to_owned()
}

/// The header's declarations, by name.
fn declarations(header: &str) -> BTreeMap<String, Decl> {
    // Comments, preprocessor lines and `extern "C"` out; what is left is
    // a sequence of `;`-terminated declarations.
    let mut text = String::new();
    let mut in_block = false;
    for line in header.lines() {
        let mut l = line;
        if in_block {
            match l.find("*/") {
                Some(i) => {
                    in_block = false;
                    l = &l[i + 2..];
                }
                None => continue,
            }
        }
        if let Some(i) = l.find("/*") {
            if !l[i..].contains("*/") {
                in_block = true;
            }
            l = &l[..i];
        }
        if let Some(i) = l.find("//") {
            l = &l[..i];
        }
        let t = l.trim();
        if t.starts_with('#') || t.starts_with("extern \"C\"") {
            continue;
        }
        text.push_str(t);
        text.push(' ');
    }
    let text = text.replace("extern \"C\" {", "");
    let mut decls = BTreeMap::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                let d = squeeze(&text[start..i]);
                start = i + 1;
                if let Some((name, decl)) = declaration(&d) {
                    decls.insert(name, decl);
                }
            }
            _ => {}
        }
    }
    decls
}

fn declaration(d: &str) -> Option<(String, Decl)> {
    let d = d.trim().trim_start_matches('}').trim();
    if d.is_empty() {
        return None;
    }
    if let (Some(open), Some(close)) = (d.find('{'), d.rfind('}')) {
        let head = &d[..open];
        let name = d[close + 1..].trim().to_owned();
        let items = &d[open + 1..close];
        if head.contains("enum") {
            let values = items
                .split(',')
                .map(|v| v.replace(' ', ""))
                .filter(|v| !v.is_empty())
                .collect();
            return Some((name, Decl::Enum(values)));
        }
        let fields = items
            .split(';')
            .map(squeeze)
            .filter(|f| !f.is_empty())
            .collect();
        return Some((name, Decl::Struct(fields)));
    }
    if let Some(rest) = d.strip_prefix("typedef ") {
        let name = if let Some(i) = rest.find("(*") {
            rest[i + 2..rest[i..].find(')')? + i].to_owned()
        } else {
            rest.rsplit(' ').next()?.to_owned()
        };
        return Some((name, Decl::Typedef(squeeze(rest))));
    }
    let open = d.find('(')?;
    let close = d.rfind(')')?;
    let head = &d[..open];
    let name = head
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()?
        .to_owned();
    let ret = squeeze(&head[..head.len() - name.len()]);
    let params: Vec<String> = d[open + 1..close].split(',').map(param_type).collect();
    Some((
        name.clone(),
        Decl::Function(format!("{ret} {name}({})", params.join(", "))),
    ))
}

/// The ABI a version belongs to: the major version, or `0.minor`.
fn abi_of(version: &str) -> String {
    let mut parts = version.split('.');
    let (major, minor) = (parts.next().unwrap(), parts.next().unwrap());
    if major == "0" {
        format!("0.{minor}")
    } else {
        major.to_owned()
    }
}

fn render(abi: &str, decls: &BTreeMap<String, Decl>) -> String {
    let mut out = format!(
        "# The C ABI of terroir {abi} (capi/include/terroir.h, normalised), which\n\
         # capi/tests/abi.rs compares the header with. Rewrite it with\n\
         # scripts/check-abi.sh --write after adding to the API.\n\
         abi {abi}\n"
    );
    for (name, d) in decls {
        writeln!(out, "{} {name}: {}", d.kind(), d.body()).unwrap();
    }
    out
}

fn parse_baseline(text: &str) -> (String, BTreeMap<String, Decl>) {
    let mut abi = String::new();
    let mut decls = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        if let Some(a) = line.strip_prefix("abi ") {
            abi = a.to_owned();
            continue;
        }
        let (head, body) = line.split_once(": ").expect("`kind name: body`");
        let (kind, name) = head.split_once(' ').expect("`kind name`");
        let decl = Decl::parse(kind, body).expect("a known kind");
        decls.insert(name.to_owned(), decl);
    }
    (abi, decls)
}

#[test]
fn the_header_keeps_the_abi_of_its_version() {
    let capi = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(capi.join("include/terroir.h")).unwrap();
    let current = declarations(&header);
    let abi = abi_of(env!("CARGO_PKG_VERSION"));
    let baseline_path = capi.join("abi/terroir.abi");
    if std::env::var_os("TERROIR_ABI_WRITE").is_some() {
        std::fs::write(&baseline_path, render(&abi, &current)).unwrap();
        eprintln!("wrote {}", baseline_path.display());
        return;
    }
    let (base_abi, baseline) = parse_baseline(
        &std::fs::read_to_string(&baseline_path)
            .unwrap_or_else(|e| panic!("{}: {e}", baseline_path.display())),
    );
    let mut problems = Vec::new();
    if base_abi == abi {
        for (name, old) in &baseline {
            match current.get(name) {
                None => problems.push(format!(
                    "{} {name} was removed: an ABI break within ABI {abi}",
                    old.kind()
                )),
                Some(new) if !new.extends(old) => problems.push(format!(
                    "{} {name} changed in a way programs built against ABI {abi} cannot \
                     run with:\n    was: {}\n    now: {}",
                    old.kind(),
                    old.body(),
                    new.body()
                )),
                Some(_) => {}
            }
        }
    } else {
        eprintln!("ABI {base_abi} -> {abi}: declarations may change; rewrite the baseline");
    }
    let stale = base_abi != abi || current.iter().any(|(n, d)| baseline.get(n) != Some(d));
    if !problems.is_empty() {
        panic!(
            "capi/include/terroir.h breaks the ABI of its version ({abi}):\n  {}\n\
             Restore them, or bump the version to a new ABI (before 1.0 the minor \
             version, else the major) and run scripts/check-abi.sh --write.",
            problems.join("\n  ")
        );
    }
    assert!(
        !stale,
        "capi/abi/terroir.abi does not list the header's declarations as they are now \
         (compatible additions): run scripts/check-abi.sh --write and commit it"
    );
}

#[test]
fn the_parser_sees_every_kind_of_declaration() {
    let capi = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(capi.join("include/terroir.h")).unwrap();
    let d = declarations(&header);
    assert_eq!(
        d["terroir_join"],
        Decl::Function(
            "int terroir_join(struct terroir_pool*, terroir_task_fn, void*, terroir_task_fn, void*)"
                .into()
        )
    );
    assert_eq!(
        d["terroir_version"],
        Decl::Function("uint32_t terroir_version(void)".into())
    );
    let Decl::Struct(fields) = &d["terroir_pool_config"] else {
        panic!("{:?}", d["terroir_pool_config"])
    };
    assert_eq!(fields[0], "size_t size");
    let Decl::Enum(values) = &d["terroir_error"] else {
        panic!("{:?}", d["terroir_error"])
    };
    assert_eq!(values[0], "TERROIR_ERROR_OK=0");
    assert_eq!(
        d["terroir_task_fn"],
        Decl::Typedef("void (*terroir_task_fn)(void*arg)".into())
    );
    assert!(matches!(d["terroir_pool"], Decl::Typedef(_)));
    // Every function the header declares is in the map.
    let functions = header.matches(" terroir_").count();
    assert!(functions > 30 && d.len() > 40, "{}", d.len());
}

#[test]
fn compatible_and_breaking_changes_are_told_apart() {
    let s = |v: &[&str]| Decl::Struct(v.iter().map(|x| x.to_string()).collect());
    let e = |v: &[&str]| Decl::Enum(v.iter().map(|x| x.to_string()).collect());
    let sized = s(&["size_t size", "uint32_t a"]);
    assert!(s(&["size_t size", "uint32_t a", "uint32_t b"]).extends(&sized));
    assert!(!s(&["size_t size", "uint64_t a"]).extends(&sized));
    assert!(!s(&["size_t size"]).extends(&sized));
    let plain = s(&["uint32_t a"]);
    assert!(!s(&["uint32_t a", "uint32_t b"]).extends(&plain));
    assert!(e(&["A=0", "B=1", "C=2"]).extends(&e(&["A=0", "B=1"])));
    assert!(!e(&["A=0", "B=2"]).extends(&e(&["A=0", "B=1"])));
    let f = Decl::Function("int f(int)".into());
    assert!(!Decl::Function("int f(long)".into()).extends(&f));
    assert!(f.extends(&f));
}
