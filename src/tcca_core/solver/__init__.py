"""The CP solver behind TCCA and KTCCA, one responsibility per module.

Bottom up (each module imports only those above it in this list):

* :mod:`.params`: :class:`~.params.SolverParams`, the solver's options as one
  value, and the facts its callers share (``ALGORITHMS``, ``max_cp_rank``);
  :mod:`.linalg`: SVD, covariances, whitening.
* :mod:`.sparse`: the raw moments of sparse views and the CSR row kernels.
* :mod:`.views`: :class:`~.views.WhitenedView`, the whitened data every engine reads.
* The engines of ``algorithm=``: :mod:`.dense` (M built in memory),
  :mod:`.implicit` (M never formed), :mod:`.tensorly` (tensorly's ``parafac``,
  the reference).
* :mod:`.als`: CP-ALS on any tensor's MTTKRP (starts, line search, stopping rule);
  :mod:`.lm`: damped Gauss-Newton on the same (``solver="lm"``), with ALS's error
  and stopping rule.
* :mod:`.engine`: one engine bound to one tensor (the cost model, the starts and
  their race, the rank loop); :mod:`.convergence`: what a fit says when ALS stops
  short.
* :mod:`.dask_chunks`, :mod:`.dask`: the implicit engine's passes as Dask tasks.
* :mod:`.path`: the rank path of TCCA (in memory or on Dask) and KTCCA.
"""
