"""Static files as served: hashed names, compressed copies, ES module imports rewritten.

``collectstatic`` (``bin/run``, ``bin/setup``'s deployment steps) writes every file under
a name holding its content hash, with gzip copies, and a manifest; WhiteNoise serves them
(``config/settings.py``: ``WhiteNoiseMiddleware``), the hashed ones cacheable forever. The
page's script is ES modules that import each other by relative name (``./api.js``):
``support_js_module_import_aggregation`` makes Django rewrite those imports to the hashed
names too, so a changed module is never mixed with a cached copy of its importer.

A module's hash settles one post-processing pass after those of the modules it imports,
so the passes must outnumber the longest chain of imports (``app.js`` down to
``code_blocks.js`` is nine modules; Django's default is five passes).
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedModuleStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
    max_post_process_passes = 20
