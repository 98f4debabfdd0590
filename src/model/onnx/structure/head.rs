//! The task head after the last hidden state: token or span outputs on every token, the
//! masked-LM transform and decoder (tied to the word embeddings or not), or a pooled head.

use super::*;

impl<'a> Walker<'a, '_> {
    /// The task head after the last hidden state, if any.
    pub(super) fn head(&mut self, h: &str) -> Result<(), OnnxError> {
        if let Some(ht) = self.fam.head_transform {
            return self.transformed_head(h, ht);
        }
        let mut token = self.linears_from(h)?;
        if token.len() > 1 {
            return Err(node_err(
                token[1].node,
                "several linear heads on the last hidden state",
            ));
        }
        if let Some(first) = token.pop() {
            // Masked LM: dense → activation → LayerNorm → decoder.
            if let Some(norm) = self.norm_after(&first.out, 10)? {
                let decoder = self.next_linear(&norm.out, 6)?.ok_or_else(|| {
                    node_err(norm.node, "no decoder after the masked-LM transform")
                })?;
                let names = mlm_names(self.family);
                self.push_linear(names.dense, first)?;
                self.push_norm(names.norm, norm)?;
                return self.push_decoder(decoder);
            }
            if let Some(next) = self.next_linear(&first.out, 8)? {
                return Err(node_err(
                    next.node,
                    "unrecognised head: a second linear follows the token-wise linear",
                ));
            }
            let qa = first.n_out() == 2
                && (self.graph.output.iter().any(|o| o.name == "start_logits")
                    || self.reaches_op(&first.out, "Split", 4));
            let name = if qa { "qa_outputs" } else { "classifier" };
            return self.push_linear(name, first);
        }
        // A head on the first token: pooling dense → activation → output projection.
        let Some(pooled) = self.next_linear(h, 6)? else {
            return Ok(()); // a bare encoder
        };
        let (pre, _, out) = sequence_head_names(self.family);
        // BERT's and ALBERT's poolers are modules of the base model.
        // DeBERTa's ContextPooler is the task model's (`pooler.dense`).
        let pre = if (pre == "pooler.dense" || pre == "pooler")
            && !matches!(self.family, ModelType::DebertaV2 | ModelType::Deberta)
        {
            format!("{}.{pre}", self.prefix)
        } else {
            pre.to_string()
        };
        match self.next_linear(&pooled.out, 6)? {
            Some(proj) => {
                self.push_linear(&pre, pooled)?;
                self.push_linear(out, proj)
            }
            None if self.family == ModelType::Bert => self.push_linear(&pre, pooled),
            None => Err(node_err(
                pooled.node,
                "unrecognised head: one linear on the first token",
            )),
        }
    }

    /// The masked-LM decoder: its weight unless it is the word embeddings' (tied), its bias.
    pub(super) fn push_decoder(&mut self, decoder: Linear<'a>) -> Result<(), OnnxError> {
        let names = mlm_names(self.family);
        self.mark(decoder.node);
        let word = format!("{}.{}.weight", self.prefix, self.fam.embeddings.word);
        let tied = (self.imp.origins.get(&word)).is_some_and(|o| *o == decoder.weight.origin);
        if !tied {
            self.imp
                .push(format!("{}.weight", names.decoder), decoder.weight)?;
        }
        match decoder.bias {
            Some(b) => self.imp.push(names.bias.to_string(), b),
            None => Ok(()),
        }
    }
}
