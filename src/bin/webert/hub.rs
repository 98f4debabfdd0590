//! `--model` as a folder or a model id: an id (`ORG/NAME`, when no local folder has that name)
//! is downloaded from a host with the Hugging Face Hub's URL layout
//! (`{host}/{id}/resolve/{revision}/{file}`) into a cache folder once, then read from there.

use clap::Args;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use webert::model::files::{self, ModelFiles};
use webert::model::sentence;
use webert::{Error, Result};

const DEFAULT_HOST: &str = "https://huggingface.co";
/// Which files a cached model folder holds for each dtype (`""`: none given).
const MANIFEST: &str = ".webert-files.json";
const ATTEMPTS: u32 = 3;

#[derive(Args)]
pub struct Source {
    /// A Hugging Face model folder (config.json, tokenizer.json, model.safetensors or
    /// onnx/model*.onnx), or a model id such as Xenova/bert-base-NER (when no local folder has
    /// that name), downloaded from --remote-host
    #[arg(long)]
    pub model: String,
    /// Which weights: fp32 (safetensors, else onnx/model.onnx), fp16, q8 (model_quantized),
    /// int8, uint8, q4, q4f16, bnb4 (default: the most accurate present)
    #[arg(long)]
    pub dtype: Option<String>,
    /// Host of model ids, with the Hub's URL layout (default: $WEBERT_REMOTE_HOST, else
    /// https://huggingface.co)
    #[arg(long)]
    pub remote_host: Option<String>,
    /// Branch, tag or commit of a model id
    #[arg(long, default_value = "main")]
    pub revision: String,
    /// Where downloaded models are kept (default: $XDG_CACHE_HOME/webert, else ~/.cache/webert)
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Model ids from the cache only, no network
    #[arg(long)]
    pub offline: bool,
}

impl Source {
    /// The model's files: from its folder, or from the cache after downloading what is missing.
    pub fn files(&self) -> Result<ModelFiles> {
        if let Some(d) = &self.dtype {
            files::dtype_file(d)?;
        }
        let local = Path::new(&self.model);
        // `models/minilm` beside a `models` folder is a path, whatever its shape.
        let beside_a_folder = local
            .parent()
            .is_some_and(|p| !p.as_os_str().is_empty() && p.is_dir());
        match model_id(&self.model) {
            Some(id) if !local.exists() && !beside_a_folder => Hub::new(self, id)?
                .files(self.dtype.as_deref())
                .map_err(|e| Error::Config {
                    file: self.model.clone(),
                    msg: format!("no local folder of that name here, and as a Hub id: {e}"),
                }),
            id if !local.exists() => Err(Error::Config {
                file: self.model.clone(),
                msg: match id {
                    Some(_) => "no such folder (read as a path, not a Hub id: the folder it \
                                would be in is here)"
                        .into(),
                    None => "no such folder".into(),
                },
            }),
            _ => ModelFiles::from_dir_dtype(local, self.dtype.as_deref()),
        }
    }
}

/// `ORG/NAME` (or a bare legacy `NAME`) from an id or a `https://huggingface.co/ORG/NAME` URL.
fn model_id(model: &str) -> Option<String> {
    let path = ["https://huggingface.co/", "https://hf.co/"]
        .iter()
        .find_map(|p| model.strip_prefix(p))
        .map(|rest| rest.split('/').take(2).collect::<Vec<_>>().join("/"))
        .unwrap_or_else(|| model.to_string());
    let part = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && !s.contains("..")
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    let parts: Vec<&str> = path.split('/').collect();
    (parts.len() <= 2 && parts.iter().all(|p| part(p))).then_some(path)
}

fn default_cache() -> Result<PathBuf> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
    if let Some(x) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(x).join("webert"));
    }
    var("HOME")
        .map(|h| PathBuf::from(h).join(".cache/webert"))
        .ok_or_else(|| Error::Input("no cache folder: set --cache-dir or $HOME".into()))
}

/// Why a download failed, and whether trying again may help.
enum Fault {
    Retry(String),
    Fatal(String),
}

struct Hub {
    host: String,
    id: String,
    revision: String,
    /// The cache folder of this id and revision.
    dir: PathBuf,
    offline: bool,
    agent: ureq::Agent,
}

impl Hub {
    fn new(src: &Source, id: String) -> Result<Hub> {
        let host = (src.remote_host.clone())
            .or_else(|| std::env::var("WEBERT_REMOTE_HOST").ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| DEFAULT_HOST.into());
        let host = host.trim_end_matches('/').to_string();
        let cache = match &src.cache_dir {
            Some(d) => d.clone(),
            None => default_cache()?,
        };
        let host_key = host
            .split("://")
            .last()
            .unwrap_or(&host)
            .replace([':', '/'], "_");
        let dir = cache
            .join(host_key)
            .join(&id)
            .join(src.revision.replace('/', "--"));
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(10)
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_recv_response(Some(Duration::from_secs(60)))
            .user_agent(concat!("webert/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Hub {
            host,
            id,
            revision: src.revision.clone(),
            dir,
            offline: src.offline,
            agent,
        })
    }

    fn url(&self, file: &str) -> String {
        let rev = self.revision.replace('/', "%2F");
        format!("{}/{}/resolve/{rev}/{file}", self.host, self.id)
    }

    fn error(&self, file: &str, msg: String) -> Error {
        Error::Config {
            file: format!(
                "model {} on {} (revision {}), {file}",
                self.id, self.host, self.revision
            ),
            msg,
        }
    }

    fn files(&self, dtype: Option<&str>) -> Result<ModelFiles> {
        let key = dtype.unwrap_or("");
        if let Some(list) = self.manifest().remove(key) {
            if list.iter().all(|f| self.dir.join(f).is_file()) {
                return self.read(&list);
            }
        }
        if self.offline {
            if self.dir.join("config.json").is_file() {
                let mut files = ModelFiles::from_dir_dtype(&self.dir, dtype)?;
                files.origin = self.id.clone();
                return Ok(files);
            }
            return Err(self.error(
                "config.json",
                format!(
                    "not in the cache ({}); run once without --offline",
                    self.dir.display()
                ),
            ));
        }
        let mut list = Vec::new();
        // What the engine reads: config.json and tokenizer.json, tokenizer_config.json if there.
        for file in files::TEXT_FILES {
            if self.fetch(file, !files::REQUIRED_FILES.contains(file))? {
                list.push(file.to_string());
            }
        }
        // A sentence-transformers folder: its modules, their settings and Pooling config.
        for file in [sentence::MODULES, sentence::SETTINGS] {
            if self.fetch(file, true)? {
                list.push(file.to_string());
            }
        }
        if list.iter().any(|f| f == sentence::MODULES) {
            let path = self.dir.join(sentence::MODULES);
            let modules = std::fs::read_to_string(&path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            if let Some(file) = sentence::pooling_file(&self.id, &modules)? {
                if self.fetch(&file, true)? {
                    list.push(file);
                }
            }
        }
        list.extend(self.weights(dtype)?);
        let mut all = self.manifest();
        all.insert(key.to_string(), list.clone());
        let json = serde_json::to_vec_pretty(&all).unwrap_or_default();
        self.write_atomic(MANIFEST, &json)?;
        self.read(&list)
    }

    fn read(&self, list: &[String]) -> Result<ModelFiles> {
        let mut files = ModelFiles::new(self.id.clone());
        for f in list
            .iter()
            .filter(|f| f.as_str() != "model.safetensors.index.json")
        {
            let path = self.dir.join(f);
            let bytes = std::fs::read(&path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            files.add(f.clone(), bytes);
        }
        Ok(files)
    }

    fn manifest(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        std::fs::read(self.dir.join(MANIFEST))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// The weights for `dtype` (as [`files::pick_weights`] chooses them), downloaded; only the
    /// files it needs are fetched. The names, shard index included.
    fn weights(&self, dtype: Option<&str>) -> Result<Vec<String>> {
        if matches!(dtype, None | Some("fp32")) {
            if self.fetch("model.safetensors", true)? {
                return Ok(vec!["model.safetensors".into()]);
            }
            let index = "model.safetensors.index.json";
            if self.fetch(index, true)? {
                let shards = self.shards(index)?;
                for s in &shards {
                    self.fetch(s, false)?;
                }
                return Ok([vec![index.to_string()], shards].concat());
            }
        }
        let candidates: Vec<&str> = match dtype {
            Some(d) => vec![files::dtype_file(d)?],
            None => (files::WEIGHT_FILES.iter().copied())
                .filter(|f| f.ends_with(".onnx"))
                .collect(),
        };
        for f in candidates {
            if self.fetch(f, true)? {
                return Ok(vec![f.to_string()]);
            }
        }
        // Nothing for this dtype: say which weights the model has.
        let mut present = Vec::new();
        for f in files::WEIGHT_FILES {
            if self.exists(f) {
                present.push(f.to_string());
            }
        }
        let origin = format!("model {} on {}", self.id, self.host);
        Err(match files::pick_weights(&origin, &present, dtype) {
            Err(e) => e,
            Ok(_) => Error::NoWeights(origin),
        })
    }

    fn shards(&self, index: &str) -> Result<Vec<String>> {
        let bytes = std::fs::read(self.dir.join(index)).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let mut shards: Vec<String> = (v["weight_map"].as_object().into_iter())
            .flat_map(|m| m.values().filter_map(|s| s.as_str().map(String::from)))
            .collect();
        shards.sort();
        shards.dedup();
        if shards.is_empty() || shards.iter().any(|s| model_id(s).as_deref() != Some(s)) {
            return Err(self.error(index, "no usable weight_map".into()));
        }
        Ok(shards)
    }

    fn exists(&self, file: &str) -> bool {
        let resp = self.agent.head(&self.url(file)).call();
        resp.is_ok_and(|r| r.status().is_success())
    }

    /// `file` into the cache unless it is there; `false` for a 404 of an optional file.
    /// Server errors and cut-off downloads are tried again.
    fn fetch(&self, file: &str, optional: bool) -> Result<bool> {
        if self.dir.join(file).is_file() {
            return Ok(true);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.download(file, optional) {
                Ok(found) => return Ok(found),
                Err(Fault::Retry(msg)) if attempt < ATTEMPTS => {
                    eprintln!("webert: {} {file}: {msg}; trying again", self.id);
                    std::thread::sleep(Duration::from_millis(300 << attempt));
                }
                Err(Fault::Retry(msg)) => {
                    let msg = format!("{msg} (after {ATTEMPTS} attempts)");
                    return Err(self.error(file, msg));
                }
                Err(Fault::Fatal(msg)) => return Err(self.error(file, msg)),
            }
        }
    }

    fn download(&self, file: &str, optional: bool) -> std::result::Result<bool, Fault> {
        let url = self.url(file);
        let resp = (self.agent.get(&url).call())
            .map_err(|e| Fault::Retry(format!("cannot fetch {url}: {e}")))?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => {}
            404 | 401 if optional => return Ok(false),
            404 | 401 => {
                return Err(Fault::Fatal(format!(
                    "not found (HTTP {status} for {url}); is {} a model id on {} (a private or \
                     gated model needs a token, which webert does not send)?",
                    self.id, self.host
                )))
            }
            429 | 500..=599 => return Err(Fault::Retry(format!("HTTP {status} for {url}"))),
            _ => return Err(Fault::Fatal(format!("HTTP {status} for {url}"))),
        }
        let header =
            |n: &str| (resp.headers().get(n)).and_then(|v| v.to_str().ok().map(str::to_string));
        let declared: Option<u64> = header("content-length").and_then(|v| v.parse().ok());
        let kind = header("content-type").unwrap_or_default();
        if kind.starts_with("text/html") {
            return Err(Fault::Fatal(format!(
                "{url} answered with an HTML page, not the file"
            )));
        }
        let mb = |b: u64| format!("{:.1} MB", b as f64 / 1048576.0);
        let size = declared.map_or(String::new(), |d| format!(" ({})", mb(d)));
        eprintln!("webert: downloading {} {file}{size}", self.id);
        let mut body = resp.into_body().into_reader();
        let tmp = self.temp_path(file);
        let cut = |got: u64, why: String| {
            let _ = std::fs::remove_file(&tmp);
            let of = declared.map_or(String::new(), |d| format!(" of {d}"));
            Fault::Retry(format!(
                "download of {url} cut off after {got}{of} bytes{why}"
            ))
        };
        let mut out = std::fs::File::create(&tmp)
            .map_err(|e| Fault::Fatal(format!("{}: {e}", tmp.display())))?;
        let mut got = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => return Err(cut(got, format!(": {e}"))),
            };
            if let Err(e) = out.write_all(&buf[..n]) {
                let _ = std::fs::remove_file(&tmp);
                return Err(Fault::Fatal(format!("{}: {e}", tmp.display())));
            }
            let tenth = |b: u64| declared.map_or(0, |d| b * 10 / d.max(1));
            // Large files: a line per tenth.
            if declared.is_some_and(|d| d > 8 << 20) && tenth(got + n as u64) > tenth(got) {
                eprintln!("webert: {file} {}0%", tenth(got + n as u64).min(10));
            }
            got += n as u64;
        }
        drop(out);
        if declared.is_some_and(|d| d != got) {
            return Err(cut(got, " (Content-Length disagrees)".into()));
        }
        if file.ends_with(".json") {
            let bytes = std::fs::read(&tmp).unwrap_or_default();
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                let _ = std::fs::remove_file(&tmp);
                let start = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).to_string();
                return Err(Fault::Fatal(format!(
                    "{url} is not JSON ({e}; content-type {kind:?}, starts {start:?})"
                )));
            }
        }
        std::fs::rename(&tmp, self.dir.join(file)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Fault::Fatal(format!("{}: {e}", self.dir.join(file).display()))
        })?;
        Ok(true)
    }

    /// A fresh temporary path beside `file`'s place in the cache (its folder created).
    fn temp_path(&self, file: &str) -> PathBuf {
        let dest = self.dir.join(file);
        let dir = dest.parent().unwrap_or(&self.dir).to_path_buf();
        let _ = std::fs::create_dir_all(&dir);
        let name = dest.file_name().unwrap_or_default().to_string_lossy();
        dir.join(format!(".{name}.part-{}", std::process::id()))
    }

    fn write_atomic(&self, file: &str, bytes: &[u8]) -> Result<()> {
        let tmp = self.temp_path(file);
        let io = |e| Error::Io {
            path: tmp.display().to_string(),
            source: e,
        };
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, self.dir.join(file)).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::model_id;

    #[test]
    fn ids_and_hub_urls() {
        assert_eq!(
            model_id("Xenova/bert-base-NER").as_deref(),
            Some("Xenova/bert-base-NER")
        );
        assert_eq!(
            model_id("bert-base-uncased").as_deref(),
            Some("bert-base-uncased")
        );
        let url = "https://huggingface.co/Xenova/bert-base-NER/tree/main";
        assert_eq!(model_id(url).as_deref(), Some("Xenova/bert-base-NER"));
        for not in [
            "./models/pii",
            "/abs/path",
            "a/b/c",
            "../x",
            "models/pii/",
            "",
        ] {
            assert_eq!(model_id(not), None, "{not}");
        }
    }
}
