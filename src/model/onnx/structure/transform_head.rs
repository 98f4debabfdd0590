//! ModernBERT's task heads: every head starts with the shared transform
//! `norm(act(dense(x)))` (the sequence head after its pooling of the first token or the
//! mean), then its own projection: the decoder over the vocabulary (masked LM) or the
//! classifier (sequence, token and span heads alike).

use super::*;
use crate::model::family::HeadPooling;
use crate::model::family::HeadTransform;

impl<'a> Walker<'a, '_> {
    pub(super) fn transformed_head(&mut self, h: &str, ht: HeadTransform) -> Result<(), OnnxError> {
        let mut token = self.linears_from(h)?;
        if token.len() > 1 {
            return Err(node_err(
                token[1].node,
                "several linear heads on the last hidden state",
            ));
        }
        let dense = match token.pop() {
            Some(dense) => dense,
            None => match self.next_linear(h, 12)? {
                Some(dense) => {
                    let mean = ["ReduceSum", "ReduceMean"]
                        .iter()
                        .any(|op| self.between_has(h, output(dense.node), &[op]));
                    self.facts.pooling = Some(match mean {
                        true => HeadPooling::Mean,
                        false => HeadPooling::First,
                    });
                    dense
                }
                None => return Ok(()), // a bare encoder
            },
        };
        let norm = self
            .norm_after(&dense.out, 10)?
            .ok_or_else(|| node_err(dense.node, "no norm after the head's dense layer"))?;
        let out = self
            .next_linear(&norm.out, 6)?
            .ok_or_else(|| node_err(norm.node, "no output projection after the head's norm"))?;
        let word = format!("{}.{}.weight", self.prefix, self.fam.embeddings.word);
        let vocab = self
            .imp
            .out
            .iter()
            .find(|t| t.name == word)
            .map(|t| t.shape[0]);
        if self.facts.pooling.is_none() && Some(out.n_out()) == vocab {
            let names = mlm_names(self.family);
            self.push_linear(names.dense, dense)?;
            self.push_norm(names.norm, norm)?;
            return self.push_decoder(out);
        }
        self.push_linear(ht.dense, dense)?;
        self.push_norm(ht.norm, norm)?;
        self.push_linear(ht.out, out)
    }
}
