//! Collects every error, so one build reports them all (as serde_derive's `Ctxt` does).

use proc_macro2::TokenStream;

/// The errors found so far.
#[derive(Default)]
pub struct Errors {
    first: Option<syn::Error>,
}

impl Errors {
    /// Records `error` beside the others.
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.first {
            Some(first) => first.combine(error),
            None => self.first = Some(error),
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Every message recorded, in order (for tests).
    #[cfg(test)]
    pub fn messages(self) -> Vec<String> {
        self.first.into_iter().flatten().map(|e| e.to_string()).collect()
    }

    /// The errors as `compile_error!` invocations (empty if none).
    pub fn into_compile_errors(self) -> TokenStream {
        self.first.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}
