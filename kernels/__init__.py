"""GPU kernels (Triton), each with a torch reference twin of the same signature.

Every kernel module imports ``triton`` only inside its Triton entry point, so importing this
package (and using the ``*_reference`` twins) works on machines without Triton or CUDA. The
twins define the semantics; tests compare each kernel against its twin on the GPU.
"""
