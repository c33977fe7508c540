//! The eleven web pages of Manzoor et al. (WCNC 2019), Table II, as files: the same object
//! sizes the simulator loads (python/lasthop/webpages.py, which builds a spec's page objects;
//! a test keeps the two equal). The table gives per page the number of objects of each type
//! and the total size; the total is split over the objects by per-type weights HTML 3, CSS 2,
//! JS 4, image 2, other 1, the rounding remainder going to the first HTML object.

use std::path::Path;

pub use lasthop_sim::spec_in::pages::{objects, TABLE_II};

const EXT: [&str; 5] = ["html", "css", "js", "img", "bin"];

/// The URL path of object `i` of page `name` (object 0 is the page's HTML).
pub fn object_path(name: &str, i: usize, kind: usize) -> String {
    if i == 0 {
        format!("/pages/{name}/index.html")
    } else {
        format!("/pages/{name}/o{i}.{}", EXT[kind])
    }
}

/// Write every page under `dir/pages/`: the HTML names its objects and is padded to its size;
/// the other objects are filler of their exact sizes.
pub fn write_all(dir: &Path) -> std::io::Result<()> {
    for (name, _, _) in TABLE_II {
        let objs = objects(name).expect("a table page");
        let d = dir.join("pages").join(name);
        std::fs::create_dir_all(&d)?;
        let mut html = format!("<!doctype html>\n<title>{name} (Table II)</title>\n");
        for (i, &(k, _)) in objs.iter().enumerate().skip(1) {
            html += &format!("<link rel=preload href=\"{}\">\n", object_path(name, i, k));
        }
        // Padded to the object's size with a comment ("<!--" + filler + "-->\n").
        let want = objs[0].1 as usize;
        if html.len() + 8 <= want {
            let fill = want - html.len() - 8;
            html += "<!--";
            html += &"x".repeat(fill);
            html += "-->\n";
        }
        std::fs::write(d.join("index.html"), html.as_bytes())?;
        for (i, &(k, size)) in objs.iter().enumerate().skip(1) {
            let body: Vec<u8> = (0..size).map(|j| b'a' + ((j as usize + i) % 26) as u8).collect();
            std::fs::write(d.join(object_path(name, i, k).rsplit('/').next().expect("a file name")), body)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_pages_have_the_table_sizes() {
        let d = std::env::temp_dir().join(format!("lh-pages-{}", std::process::id()));
        write_all(&d).unwrap();
        for (name, _, _) in TABLE_II {
            for (i, (k, size)) in objects(name).unwrap().into_iter().enumerate() {
                let p = d.join(object_path(name, i, k).trim_start_matches('/'));
                assert_eq!(std::fs::metadata(&p).unwrap().len(), size, "{}", p.display());
            }
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pages_keep_counts_and_totals() {
        for (name, counts, kb) in TABLE_II {
            let o = objects(name).unwrap();
            assert_eq!(o.len() as u32, counts.iter().sum::<u32>());
            assert_eq!(o.iter().map(|x| x.1).sum::<u64>(), kb * 1000);
            assert_eq!(o[0].0, 0, "HTML first");
        }
        assert!(objects("altavista").is_none());
    }
}
