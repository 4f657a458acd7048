//! Remoting server loop (being written).
