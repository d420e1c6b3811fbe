"""Devices end to end (issue 23): the simulator with simulated parts wired (tools/sim
--part), a scripted model (tests/fakes/llm.py) calling the device tools, through the
WebSocket gateway and Telegram: a person adds the SHT3x and the board's LED by chat,
reads the temperature, turns the LED a colour and sees it with sim_get on the console;
the devices are still there after a restart."""
import asyncio
import json

from websockets.asyncio.client import connect

from simproc import Sim, llm_settings

TOKEN = "devices-e2e-token"
PARTS = ["sht3x:sda=8,scl=9,addr=0x44", "rgb_led:pin=48,n=1"]  # as in the make run


def call(tool, **args):
    return {"name": tool, "input": args}


def tool_results(req):
    """The tool_result texts of an Anthropic request (the turn's last user message)."""
    out = []
    for m in req["body"]["messages"]:
        if isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b["content"]
                    out.append(c if isinstance(c, str) else "".join(x.get("text", "") for x in c))
    return out


def tools_offered(req):
    return [t["name"] for t in req["body"]["tools"]]


def system_text(req):
    s = req["body"]["system"]
    return s if isinstance(s, str) else "".join(b["text"] for b in s)


async def ask(ws, text):
    await ws.send(json.dumps({"type": "message", "content": text, "chat_id": "home"}))
    while True:
        f = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if f["type"] == "response":
            return f["content"]


def console(sim, expr, tag):
    """Evaluate expr on the simulator's serial console -> what it printed."""
    sim.send("print(%r, %s)\r" % (tag, expr))
    return sim.wait_for(r"%s (.*)" % tag).group(1).strip()


def test_websocket_chat_adds_reads_and_drives_devices(tmp_path, fake_anthropic):
    llm = fake_anthropic
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, *llm_settings(llm),
                   console=True, parts=PARTS) as sim:
        async def chat():
            async with connect(sim.url + "?token=" + TOKEN) as ws:
                llm.script(
                    {"text": "", "tool_calls": [
                        call("device_add", name="living_temp", type="sht3x", sda=8, scl=9, addr=0x44),
                        call("device_add", name="led", type="rgb_led", pin=48)]},
                    {"text": "", "tool_calls": [call("device_read", name="living_temp")]},
                    {"text": "Added both; it is 21.5 °C."})
                a1 = await ask(ws, "I wired an SHT31 to SDA 8 / SCL 9 and the board's LED is on 48: add them")
                console(sim, "sim_set('sht3x@0x44', temp=24.2, hum=55)", "SET")
                llm.script({"text": "", "tool_calls": [call("device_read", name="living_temp")]},
                           {"text": "24.2 °C and 55 % humidity."})
                a2 = await ask(ws, "How warm is it in the living room?")
                llm.script({"text": "", "tool_calls": [call("device_set", name="led", value="purple")]},
                           {"text": "The LED is purple."})
                a3 = await ask(ws, "Make the LED purple")
                return a1, a2, a3

        answers = asyncio.run(chat())
        assert answers == ("Added both; it is 21.5 °C.", "24.2 °C and 55 % humidity.", "The LED is purple.")
        assert console(sim, "sim_get('rgb_led@48')", "LED") == "[(64, 0, 128)]"  # purple at the 50 % cap
        reqs = llm.requests
        assert llm.violations == []
        # turn 1: no device yet, so no device_read offered; after the adds it is (same turn)
        assert "device_read" not in tools_offered(reqs[0]) and "device_add" in tools_offered(reqs[0])
        assert tool_results(reqs[1]) == [
            "OK: added living_temp (sht3x at 0x44 on SDA 8 / SCL 9): living_temp = 21.5 °C, humidity 40 %",
            "OK: added led (rgb_led on GPIO48): led = off"]
        assert "device_read" in tools_offered(reqs[1])
        assert tool_results(reqs[2])[-1] == "living_temp = 21.5 °C, humidity 40 %"
        # turn 2: the prompt lists the devices; the reading follows the part
        assert "- living_temp (sht3x at 0x44 on SDA 8 / SCL 9): 21.5 °C, humidity 40 %" in system_text(reqs[3])
        assert tool_results(reqs[4])[-1] == "living_temp = 24.2 °C, humidity 55 %"
        assert tool_results(reqs[6])[-1] == "OK: led = purple (#8000ff) at 50 %"

    # persistence over a restart: the devices come back from /devices.json
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, *llm_settings(llm), parts=PARTS) as sim:
        llm.reset()
        llm.script({"text": "", "tool_calls": [call("device_list")]}, {"text": "Listed."})

        async def again():
            async with connect(sim.url + "?token=" + TOKEN) as ws:
                return await ask(ws, "What is attached?")

        assert asyncio.run(again()) == "Listed."
        listed = tool_results(llm.requests[1])[-1]
        assert listed.startswith("living_temp (sht3x at 0x44 on SDA 8 / SCL 9): not read yet\n"
                                 "led (rgb_led on GPIO48): off (as at boot)\nchip_temp (chip_temp inside the chip): "), listed


def test_telegram_chat_reads_and_drives_devices(tmp_path, fake_telegram, fake_anthropic):
    tg, llm = fake_telegram, fake_anthropic
    with Sim.start(tmp_path, "ws_port=0", "tg_api_base=" + tg["base_url"], "tg_token=" + tg["token"],
                   "tg_allow=42", *llm_settings(llm), console=True,
                   parts=PARTS + ["relay:pin=21,active_low=1"]) as sim:
        sim.wait_for(r"tg: .*polling")
        llm.script(
            {"text": "", "tool_calls": [call("device_add", name="fan", type="relay", pin=21, inverted=True),
                                        call("device_add", name="living_temp", type="sht3x")]},
            {"text": "", "tool_calls": [call("device_set", name="fan", value="on"),
                                        call("device_read", name="living_temp")]},
            {"text": "The fan is on; it is 21.5 °C."})
        tg.update(chat_id=42, text="add the fan relay on 21 (active low) and the sensor, then turn the fan on")
        st = tg.wait(lambda s: any(m["chat_id"] == 42 and "fan is on" in m["visible"] for m in s["sent"]), 90)
        assert [m for m in st["sent"] if m["chat_id"] == 42][-1]["visible"] == "The fan is on; it is 21.5 °C."
        assert console(sim, "sim_get('relay@21')['on']", "RELAY") == "True"
        reqs = llm.requests
        assert llm.violations == []
        assert tool_results(reqs[2])[-2:] == ["OK: fan = on", "living_temp = 21.5 °C, humidity 40 %"]
        # a part that stops answering: the model is told what to check, nothing breaks
        console(sim, "sim_set('sht3x@0x44', fault='nack')", "FAULT")
        llm.script({"text": "", "tool_calls": [call("device_read", name="living_temp")]},
                   {"text": "The sensor does not answer."})
        tg.update(chat_id=42, text="temperature?")
        tg.wait(lambda s: any("does not answer" in m["visible"] for m in s["sent"]), 90)
        err = tool_results(llm.requests[-1])[-1]
        assert err.startswith("Error: living_temp (sht3x at 0x44 on SDA 8 / SCL 9) did not answer: "
                              "no acknowledge. Check the wiring"), err
