
app_name = "state"

urlpatterns: list = []
