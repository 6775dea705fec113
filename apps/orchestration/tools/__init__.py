"""Tools of directors and agents: schemas in schemas.py, implementations per area, assembled by registry.py."""
