//! Finds the handler modules (`src/handlers/<name>.rs` or `src/handlers/<name>/mod.rs`) and
//! writes their `mod` lines and the dispatch on a registry row's module name, so a new built-in
//! type is its file plus its registry row (docs/development.md "Adding a job type"). The generated
//! code checks the files against the registry at compile time.

use std::path::Path;
use std::{env, fs};

fn main() {
    let dir = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("src/handlers");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut modules: Vec<(String, String)> = fs::read_dir(&dir)
        .expect("src/handlers")
        .filter_map(|entry| {
            let path = entry.expect("src/handlers entry").path();
            let name = path.file_stem()?.to_str()?.to_owned();
            let file = if path.is_dir() {
                path.join("mod.rs")
            } else if path.extension()? == "rs" && name != "mod" {
                path
            } else {
                return None;
            };
            file.is_file().then(|| (name, file.display().to_string()))
        })
        .collect();
    modules.sort();

    let mut out = String::new();
    for (name, file) in &modules {
        out += &format!("#[path = {file:?}]\nmod {name};\n");
    }
    let names: Vec<String> = modules.iter().map(|(n, _)| format!("{n:?}")).collect();
    out += &format!(
        "\n/// The handler modules the build found.\nconst MODULES: &[&str] = &[{}];\n\
         const _: () = jobs_shared::job::registry::check_handler_modules(MODULES);\n\n\
         /// Runs one claimed job through the module its type's registry row names. Each\n\
         /// handler's future is boxed: its code stays a function of its own rather than\n\
         /// part of the batch's one state machine, which V8 would optimize whole, every\n\
         /// handler included, once the batch's code is hot (docs/performance.md \"Benchmark\").\n\
         pub fn run<'a>(ctx: &'a JobContext<'a>) -> LocalBoxFuture<'a, HandlerRun> {{\n    \
         match ctx.job_type.handler().module() {{\n",
        names.join(", ")
    );
    for (name, _) in &modules {
        out += &format!("        {name:?} => Box::pin({name}::run(ctx)),\n");
    }
    out += "        other => unreachable!(\"no handler module {other}: checked at compile time\"),\n    }\n}\n";
    let target = Path::new(&env::var("OUT_DIR").unwrap()).join("handlers.rs");
    fs::write(target, out).expect("write handlers.rs");
}
