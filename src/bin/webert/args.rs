//! Arguments that several subcommands share: the model and its inputs, and the pattern layer.

use clap::Args;
use webert::engine::Device;
use webert::tasks::patterns::{CustomPattern, Patterns};
use webert::{Error, Result};

#[derive(Args)]
pub struct Common {
    #[command(flatten)]
    pub model: super::hub::Source,
    /// Input text; repeat for several. Without it, texts are read from stdin, one per line.
    #[arg(long)]
    pub text: Vec<String>,
    /// Cut inputs longer than the model takes instead of failing
    #[arg(long)]
    pub truncate: bool,
    /// Cut inputs to this many tokens (implies --truncate)
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// auto: a hardware GPU if it beats the CPU at load, else the CPU (and the CPU if the GPU fails)
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Device,
}

impl Common {
    pub fn truncation(&self) -> Option<usize> {
        self.max_tokens.or(self.truncate.then_some(usize::MAX))
    }
}

#[derive(Args)]
pub struct PatternArgs {
    /// Also find e-mails, phones, IBANs, card numbers, IP addresses and SSNs by validated rules
    #[arg(long)]
    patterns: bool,
    /// Also find every match of REGEX as an entity of type LABEL (repeatable)
    #[arg(long = "pattern", value_name = "LABEL=REGEX")]
    custom: Vec<String>,
}

impl PatternArgs {
    pub fn layer(&self) -> Result<Option<Patterns>> {
        let mut custom = Vec::new();
        for p in &self.custom {
            let Some((label, regex)) = p.split_once('=') else {
                return Err(Error::Input(format!("--pattern {p}: expected LABEL=REGEX")));
            };
            custom.push(CustomPattern {
                label: label.into(),
                regex: regex.into(),
            });
        }
        let p = Patterns::new(self.patterns, &custom)?;
        Ok((!p.is_empty()).then_some(p))
    }
}
