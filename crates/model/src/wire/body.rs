//! What the request bodies of the OpenAI-style formats share.

use serde_json::{Map, Value};

use crate::types::ChatRequest;

/// Adds the common sampling fields under the names every OpenAI-style API uses.
pub(crate) fn sampling(obj: &mut Map<String, Value>, req: &ChatRequest) {
    if let Some(t) = req.sampling.temperature {
        obj.insert("temperature".into(), t.into());
    }
    if let Some(p) = req.sampling.top_p {
        obj.insert("top_p".into(), p.into());
    }
}
