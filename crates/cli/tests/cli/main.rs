//! The `snarkflow` binary run as a user runs it, one test binary: HTTPS to a gateway, the
//! parameter commands and doctor.

mod https;
mod params;
