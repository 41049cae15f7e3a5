"""What the agent can use: skills (scripted per namespace through an admin control, since the
emulator has no $HERMES_HOME) and the toolsets Hermes 0.19.0 reports on `GET /v1/toolsets`."""
from ..errors import InvalidRequest
from .toolsets import CATALOGUE

SKILLS = "hermes-skills"   # "<n>" -> {n, name, description, category}


def skill_of(item):
    """One scripted skill: `name` (required), `description`, `category` (null = top level)."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not (
            item["name"].strip()):
        raise InvalidRequest("skills: each skill needs a non-empty string 'name'")
    description, category = item.get("description", ""), item.get("category")
    if not isinstance(description, str) or not (category is None or isinstance(category, str)):
        raise InvalidRequest("skills: 'description' is a string, 'category' a string or null")
    return {"name": item["name"].strip(), "description": description, "category": category}


class Catalog:
    """Skills and toolsets of one instance."""

    def __init__(self, instance):
        self.instance = instance
        self.records = instance.records

    def skills(self):
        """GET /v1/skills: sorted by (category or "", name), as upstream lists them."""
        rows = [{"name": row["name"], "description": row["description"],
                 "category": row["category"]} for row in self.records.list(SKILLS)]
        rows.sort(key=lambda row: (row["category"] or "", row["name"]))
        return {"object": "list", "data": rows}

    def set_skills(self, body):
        """Admin control: replace the namespace's skills with `{"skills": [...]}`."""
        items = body.get("skills") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise InvalidRequest("skills: expected {\"skills\": [{name, description?, "
                                 "category?}, ...]}")
        skills = [skill_of(item) for item in items]
        with self.instance.transaction():
            for row in self.records.list(SKILLS):
                self.records.delete(SKILLS, row["n"])
            for n, skill in enumerate(skills):
                self.records.put(SKILLS, n, {"n": n, **skill})
        return self.skills()

    @staticmethod
    def toolsets():
        """GET /v1/toolsets: the 0.19.0 catalogue; nothing is enabled (no tools run here)."""
        return {"object": "list", "platform": "api_server", "data": [
            {"name": name, "label": label, "description": description, "enabled": False,
             "configured": configured, "tools": list(tools)}
            for name, label, description, configured, tools in CATALOGUE]}
