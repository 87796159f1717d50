"""The ledger refuses UPDATE and DELETE in the database itself; pgvector is created here too."""

from django.db import migrations
from pgvector.django import VectorExtension

APPEND_ONLY_FUNCTION = """
CREATE OR REPLACE FUNCTION awp_refuse_ledger_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the % table is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def append_only(table: str) -> migrations.RunSQL:
    """A RunSQL that makes `table` refuse UPDATE and DELETE (other apps reuse this for their append-only tables)."""
    return migrations.RunSQL(
        sql=f"""
        CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION awp_refuse_ledger_change();
        """,
        reverse_sql=f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};",
    )


class Migration(migrations.Migration):
    dependencies = [("experiments", "0001_initial")]

    operations = [
        VectorExtension(),
        migrations.RunSQL(APPEND_ONLY_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS awp_refuse_ledger_change();"),
        append_only("experiments_event"),
    ]
