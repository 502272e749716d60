"""Build hook: ship ``trac_eval.pth`` (the start-up hook that makes lm-eval see trac-eval, see
``trac_tasks/harness/autoload.py``) at the root of site-packages, in normal and editable installs alike, and the
``task_configs`` folder inside the ``trac_tasks`` package of a normal install."""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class TracEvalBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            build_data["force_include_editable"]["trac_eval.pth"] = "trac_eval.pth"
        else:
            build_data["force_include"]["trac_eval.pth"] = "trac_eval.pth"
            build_data["force_include"]["task_configs"] = "trac_tasks/task_configs"
