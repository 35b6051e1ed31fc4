//! The circuit the device probe proves: a product chain y_{i+1} = y_i · w_i over random
//! private w_i, with the last y public. Every witness value is a random field element, so
//! the multiexps see no zeros or ones (what a bit-heavy circuit would let a broken kernel
//! get away with). The prover owns it: probing a device needs no proof kind.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;

/// `steps` multiplications; `factors` is `None` for the blank circuit.
pub(crate) struct ProductChain {
    pub steps: usize,
    /// y_0, then one factor per step.
    pub factors: Option<Vec<Fr>>,
}

impl ProductChain {
    pub(crate) fn random(steps: usize, rng: &mut impl rand::RngCore) -> Self {
        ProductChain { steps, factors: Some((0..=steps).map(|_| Fr::random(&mut *rng)).collect()) }
    }

    /// The public output, computed natively.
    pub(crate) fn output(&self) -> Option<Fr> {
        self.factors.as_ref().map(|f| f.iter().product())
    }
}

impl Circuit<Fr> for ProductChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let value = |i: usize| self.factors.as_ref().map(|f| f[i]);
        let known = |v: Option<Fr>| v.ok_or(SynthesisError::AssignmentMissing);
        let mut y_value = value(0);
        let mut y = cs.alloc(|| "y0", || known(y_value))?;
        for step in 1..=self.steps {
            let w_value = value(step);
            let w = cs.alloc(|| format!("w{step}"), || known(w_value))?;
            let next_value = y_value.zip(w_value).map(|(y, w)| y * w);
            let next = if step == self.steps {
                cs.alloc_input(|| "output", || known(next_value))?
            } else {
                cs.alloc(|| format!("y{step}"), || known(next_value))?
            };
            cs.enforce(|| format!("step {step}"), |lc| lc + y, |lc| lc + w, |lc| lc + next);
            y = next;
            y_value = next_value;
        }
        Ok(())
    }
}
