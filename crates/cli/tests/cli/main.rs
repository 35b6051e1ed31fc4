//! The `snarkflow` binary run as a user runs it, one test binary: HTTPS to a gateway, the
//! parameter commands and doctor, `bench synth`.

mod bench;
mod https;
mod params;
