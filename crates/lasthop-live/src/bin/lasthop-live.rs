//! The standalone live tools: `lasthop-live wqm ...` on an AP or server without Python.

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(lasthop_live::tools::main(&argv));
}
