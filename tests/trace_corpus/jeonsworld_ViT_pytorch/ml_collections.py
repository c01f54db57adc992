"""A minimal stand-in for ml_collections (ours, not upstream; the project's environment has no ml_collections): the one
class models/configs.py uses, ``ConfigDict``, as a dict whose keys are also attributes. The script's folder comes first
on sys.path, so this is what `import ml_collections` finds."""


class ConfigDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        del self[name]
