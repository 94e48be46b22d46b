__version__ = version = "0.33.0"
__commit_id__ = commit_id = "g0123abc45"
