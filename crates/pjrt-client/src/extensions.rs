//! The plugin's extension chain.
