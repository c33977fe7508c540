//! A Prometheus scrape endpoint (text exposition format 0.0.4): `GET /metrics` on a TCP
//! address, served from a background thread out of the latest snapshot the tool published.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One metric family's samples, for [`render`].
pub struct Family<'a> {
    pub name: &'a str,
    pub help: &'a str,
    /// "gauge" or "counter".
    pub kind: &'a str,
    /// (labels like `station="02:4c:48:00:00:01"`, value)
    pub samples: Vec<(String, f64)>,
}

/// The text format of `families`.
pub fn render(families: &[Family]) -> String {
    let mut s = String::new();
    for f in families {
        s += &format!("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.kind);
        for (labels, v) in &f.samples {
            let v = if v.is_finite() { format!("{v}") } else if v.is_nan() { "NaN".into() } else if *v > 0.0 { "+Inf".into() } else { "-Inf".into() };
            if labels.is_empty() {
                s += &format!("{} {v}\n", f.name);
            } else {
                s += &format!("{}{{{labels}}} {v}\n", f.name);
            }
        }
    }
    s
}

/// The endpoint: publish a new snapshot with [`Exporter::set`].
pub struct Exporter {
    text: Arc<Mutex<String>>,
    pub addr: SocketAddr,
}

impl Exporter {
    /// Listen on `addr` ("127.0.0.1:9877"); Err(one line) if it cannot (in use, not allowed).
    pub fn start(addr: &str) -> Result<Exporter, String> {
        let l = TcpListener::bind(addr).map_err(|e| format!("--metrics = {addr:?}: {e}"))?;
        let local = l.local_addr().map_err(|e| e.to_string())?;
        let text = Arc::new(Mutex::new(String::new()));
        let t2 = text.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for c in l.incoming() {
                    let Ok(mut c) = c else { continue };
                    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
                    let mut req = [0u8; 1024];
                    let n = c.read(&mut req).unwrap_or(0);
                    let head = String::from_utf8_lossy(&req[..n]);
                    let path = head.split_whitespace().nth(1).unwrap_or("");
                    let (status, body, ctype) = if path == "/metrics" || path == "/" {
                        ("200 OK", t2.lock().map(|t| t.clone()).unwrap_or_default(), "text/plain; version=0.0.4")
                    } else {
                        ("404 Not Found", "not found\n".to_string(), "text/plain")
                    };
                    let _ = write!(c, "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Exporter { text, addr: local })
    }

    pub fn set(&self, text: String) {
        if let Ok(mut t) = self.text.lock() {
            *t = text;
        }
    }
}
