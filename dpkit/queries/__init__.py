"""The query model: Gaussian-kernel mixture workloads (thesis (2.1)), weighted (synthetic)
databases, their exact answers with proven numerical bounds, and the smoothness of the queries."""
