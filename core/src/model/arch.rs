//! The layer sizes of a multilayer perceptron and where each layer's weights sit in θ.

use crate::error::Error;

/// The most weight layers an [`Architecture`] holds (hidden layers + 1).
pub const MAX_LAYERS: usize = 8;

/// Layer sizes [F, H₁, …, H_d, C] of a fully connected network with ReLU hidden units
/// and a softmax output: d hidden layers (0 for softmax regression), at most
/// [`MAX_LAYERS`] − 1.
///
/// θ holds, layer after layer, the weights W_l (in × out, row-major: `W[i·out + j]`
/// connects input i to output j) and then the biases b_l (out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Architecture {
    sizes: [u32; MAX_LAYERS + 1],
    layers: usize,
}

/// One weight layer: its sizes and the offsets of its weights and biases in θ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Inputs.
    pub inputs: usize,
    /// Outputs.
    pub outputs: usize,
    /// Offset of W (inputs × outputs values) in θ.
    pub weights: usize,
    /// Offset of b (outputs values) in θ.
    pub biases: usize,
}

impl Architecture {
    /// An architecture from its layer sizes: features, hidden widths, classes. Needs at
    /// least 2 sizes (softmax regression: [F, C]), every size ≥ 1, C ≥ 2, at most
    /// [`MAX_LAYERS`] + 1 sizes, and a parameter count that fits in memory.
    pub fn new(sizes: &[usize]) -> Result<Self, Error> {
        if sizes.len() < 2 || sizes.len() > MAX_LAYERS + 1 {
            return Err(Error::InvalidValue {
                name: "layers",
                value: sizes.len() as f64,
                allowed: "2 to 9 sizes: features, up to 7 hidden widths, classes",
            });
        }
        let mut a = Architecture {
            sizes: [0; MAX_LAYERS + 1],
            layers: sizes.len() - 1,
        };
        for (slot, &n) in a.sizes.iter_mut().zip(sizes) {
            *slot = match u32::try_from(n) {
                Ok(v) if (1..=1 << 20).contains(&v) => v,
                _ => {
                    return Err(Error::InvalidValue {
                        name: "layer size",
                        value: n as f64,
                        allowed: "between 1 and 2^20",
                    });
                }
            };
        }
        if a.classes() < 2 {
            return Err(Error::InvalidValue {
                name: "classes",
                value: a.classes() as f64,
                allowed: ">= 2",
            });
        }
        // Every size is at most 2^20 and there are at most 8 layers: the count is below
        // 8 · (2^40 + 2^20), which fits in u64; require it to fit in usize and in 2^40.
        let count: u64 = (0..a.layers)
            .map(|l| u64::from(a.sizes[l] + 1) * u64::from(a.sizes[l + 1]))
            .sum();
        if count > 1 << 40 || usize::try_from(count).is_err() {
            return Err(Error::InvalidValue {
                name: "parameters",
                value: count as f64,
                allowed: "at most 2^40",
            });
        }
        Ok(a)
    }

    /// Number of weight layers (hidden layers + 1).
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Input features F.
    pub fn features(&self) -> usize {
        self.sizes[0] as usize
    }

    /// Classes C.
    pub fn classes(&self) -> usize {
        self.sizes[self.layers] as usize
    }

    /// The sizes [F, H₁, …, C].
    pub fn sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.sizes[..=self.layers].iter().map(|&s| s as usize)
    }

    /// The widest layer (inputs included).
    pub fn widest(&self) -> usize {
        self.sizes().max().unwrap_or(0)
    }

    /// Layer `l` (0-based), or `None` past the last.
    pub fn layer(&self, l: usize) -> Option<Layer> {
        if l >= self.layers {
            return None;
        }
        let mut offset = 0;
        for k in 0..l {
            offset += (self.sizes[k] as usize + 1) * self.sizes[k + 1] as usize;
        }
        let (inputs, outputs) = (self.sizes[l] as usize, self.sizes[l + 1] as usize);
        Some(Layer {
            inputs,
            outputs,
            weights: offset,
            biases: offset + inputs * outputs,
        })
    }

    /// The layers in order.
    pub fn iter(&self) -> impl Iterator<Item = Layer> + '_ {
        (0..self.layers).filter_map(|l| self.layer(l))
    }

    /// Length of θ: Σ_l (in_l + 1) · out_l.
    pub fn parameters(&self) -> usize {
        self.iter().map(|l| (l.inputs + 1) * l.outputs).sum()
    }

    /// Σ_l in_l · out_l: the multiply–adds of one example's forward pass (biases,
    /// activations and the softmax not counted).
    pub fn multiply_adds(&self) -> usize {
        self.iter().map(|l| l.inputs * l.outputs).sum()
    }

    /// Length of the scratch of [`crate::model::mlp`] for one example: every layer's
    /// outputs (the activations kept for the backward pass), and two vectors of the
    /// widest layer for the backward pass.
    pub fn scratch_len(&self) -> usize {
        self.iter().map(|l| l.outputs).sum::<usize>() + 2 * self.widest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_counts() {
        let a = Architecture::new(&[64, 128, 10]).unwrap();
        assert_eq!(
            (a.layers(), a.features(), a.classes(), a.widest()),
            (2, 64, 10, 128)
        );
        assert_eq!(a.parameters(), 65 * 128 + 129 * 10);
        assert_eq!(a.multiply_adds(), 64 * 128 + 128 * 10);
        let l1 = a.layer(1).unwrap();
        assert_eq!((l1.inputs, l1.outputs, l1.weights), (128, 10, 65 * 128));
        assert_eq!(l1.biases, 65 * 128 + 1280);
        assert!(a.layer(2).is_none());
        assert_eq!(a.scratch_len(), 138 + 256);
        let soft = Architecture::new(&[4, 3]).unwrap();
        assert_eq!(soft.parameters(), 15);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(Architecture::new(&[5]).is_err());
        assert!(Architecture::new(&[5, 1]).is_err());
        assert!(Architecture::new(&[5, 0, 3]).is_err());
        assert!(Architecture::new(&[1; 10]).is_err());
        assert!(Architecture::new(&[1 << 21, 3]).is_err());
    }
}
