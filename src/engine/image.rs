//! Engines from packed-model images ([`crate::cpu::image`]): a later load of the same files
//! that skips the weights' import and packing. CPU only: an image holds no GPU weights.

use super::load::cpu_setup;
use super::load_times::{Laps, LoadTimes};
use super::options::{Device, LoadOptions};
use super::Engine;
use crate::cpu::image::{ImageCursor, ImageSource};
use crate::cpu::CpuModel;
use crate::error::{Error, Result};
use crate::model::ModelFiles;

impl Engine {
    /// Writes the image of this engine's CPU model to `sink`, a part at a time.
    pub fn write_image(&self, sink: &mut dyn FnMut(&[u8])) -> Result<()> {
        self.cpu.model.write_image(sink)
    }

    /// The start of this engine's image, to write a piece at a time with
    /// [`Engine::write_image_chunk`].
    pub fn image_cursor(&self) -> Result<ImageCursor> {
        self.cpu.model.image_cursor()
    }

    /// The next `max` bytes of `cursor`'s image (fewer at its end) to `sink`; an error for
    /// another engine's cursor.
    pub fn write_image_chunk(
        &self,
        cursor: &mut ImageCursor,
        max: u64,
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        self.cpu.model.write_image_chunk(cursor, max, sink)
    }

    /// An engine from `image` and the folder's other files (`config.json`, the tokenizer: no
    /// weights), which must be those the image was written from: the caller keys images by
    /// the files' hashes. An error (nothing loaded) when the image is another build's,
    /// another kernel's or `quantized` mode's, or damaged; then load the files.
    pub fn from_image<S: ImageSource + ?Sized>(
        mut files: ModelFiles,
        image: &S,
        options: LoadOptions,
    ) -> Result<Engine> {
        if options.device == Device::Gpu {
            return Err(Error::Input(
                "a packed-model image runs on the CPU; load the files for the GPU".into(),
            ));
        }
        let mut laps = Laps::start();
        let (config, tokenizer) = files.config_and_tokenizer(options.budget())?;
        let parse_ms = laps.lap();
        let kernel = cpu_setup(&options)?;
        let (plan, mut cpu, held) = CpuModel::from_image(
            config.clone(),
            image,
            kernel,
            options.quantized,
            options.budget(),
        )?;
        cpu.set_budget(options.budget().saturating_sub(held));
        let times = LoadTimes {
            parse_ms,
            image_ms: laps.lap(),
            ..LoadTimes::default()
        };
        Ok(Engine::assemble(
            config,
            tokenizer,
            plan,
            cpu,
            None,
            Device::Cpu,
            times,
        ))
    }
}
