"""AI statements (placeholder until the AI operators land)."""


def analyze(prepared):  # noqa: ANN001, ANN201
    return None
